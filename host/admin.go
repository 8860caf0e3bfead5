package host

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/crypto/acme/autocert"

	"github.com/hostd/hostd/tenant"
)

// AdminSocketName is the admin socket's file name under state_dir.
const AdminSocketName = "admin.sock"

// AdminSocketPath returns the admin socket of a server whose absolute
// state directory is stateDir.
func AdminSocketPath(stateDir string) string { return filepath.Join(stateDir, AdminSocketName) }

// serverOps is the operations state of a Server: reload serialization,
// tracing, the admin socket and the optional admin HTTP listener.
type serverOps struct {
	reloadMu       sync.Mutex
	reloadFailures atomic.Uint64
	reloadPartial  atomic.Uint64  // reloads that left some vhost files unapplied
	drains         sync.WaitGroup // retired vhosts still draining
	started        time.Time

	acme      atomic.Pointer[autocert.Manager] // nil until a vhost has tls = "acme"
	trace     tracer
	metricsOn bool // admin_listen is set: latency and bytes are kept

	sockLn   net.Listener // admin socket
	adminLn  net.Listener // admin_listen (metrics, status page)
	adminSrv *http.Server
	conns    sync.WaitGroup // admin socket connections
}

// initOps is called by New once the routes exist.
func (s *Server) initOps(cfg *tenant.Config) error {
	s.ops.started = time.Now()
	s.ops.trace.euid = os.Geteuid()
	s.ops.metricsOn = cfg.Server.AdminListen != ""
	s.access.json = cfg.Server.LogFormat == "json"
	return nil
}

// listenOps binds the admin socket (state_dir/admin.sock, 0600) and the
// admin listener when configured. Listen calls it before privileges drop.
func (s *Server) listenOps() error {
	path := AdminSocketPath(s.cfg.StateDir)
	if err := os.MkdirAll(s.cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return fmt.Errorf("admin socket %s: another hostd is serving this state_dir", path)
	}
	os.Remove(path) // a stale socket of a server that is gone
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("admin socket: %w", err)
	}
	s.ops.sockLn = ln
	if a := s.cfg.Server.AdminListen; a != "" {
		aln, err := net.Listen("tcp", a)
		if err != nil {
			ln.Close()
			return fmt.Errorf("admin_listen: %w", err)
		}
		s.ops.adminLn = aln
	}
	return nil
}

// AdminAddr returns the bound admin_listen address, or "" when it is off.
func (s *Server) AdminAddr() string {
	if s.ops.adminLn == nil {
		return ""
	}
	return s.ops.adminLn.Addr().String()
}

// startOps serves the admin socket and listener until closeOps.
func (s *Server) startOps() {
	if s.ops.sockLn != nil {
		go s.serveAdminSocket(s.ops.sockLn)
	}
	if s.ops.adminLn != nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(newMetricsCollector(s),
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "hostd_build_info",
				Help: "Always 1; the labels say which hostd is running.",
				ConstLabels: prometheus.Labels{"version": s.build.Version, "revision": s.build.Revision,
					"goversion": s.build.GoVersion},
			}, func() float64 { return 1 }),
			phpCollector{s},       // php.go
			openFilesCollector{s}, // openfiles.go
			guardCollector{s})     // guard.go
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn)}))
		mux.HandleFunc("GET /status", s.serveStatusPage)
		mux.HandleFunc("GET /status.json", s.serveStatusJSON)
		profilingRoutes(mux) // pprof.go
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/status", http.StatusFound)
		})
		s.ops.adminSrv = &http.Server{Handler: s.adminAuth(mux), ReadHeaderTimeout: 10 * time.Second, ErrorLog: s.handshakeErrorLog()}
		go s.ops.adminSrv.Serve(s.ops.adminLn)
	}
}

// closeOps closes the admin socket and listener and waits for retired
// vhosts to drain. Close calls it.
func (s *Server) closeOps() {
	if s.ops.sockLn != nil {
		s.ops.sockLn.Close()
	}
	if s.ops.adminSrv != nil {
		s.ops.adminSrv.Close()
	} else if s.ops.adminLn != nil {
		s.ops.adminLn.Close()
	}
	s.ops.drains.Wait()
}

// adminRequest is one request line on the admin socket.
type adminRequest struct {
	Op    string `json:"op"`              // status | reload | reopen-logs | trace
	VHost string `json:"vhost,omitempty"` // trace: only this vhost
}

// adminReply is the answer to status and reload.
type adminReply struct {
	Error  string        `json:"error,omitempty"`
	Status *Status       `json:"status,omitempty"`
	Reload *ReloadResult `json:"reload,omitempty"`
}

func (s *Server) serveAdminSocket(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go s.serveAdminConn(c)
	}
}

func (s *Server) serveAdminConn(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(io.LimitReader(c, 4096))
	line, err := br.ReadBytes('\n')
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	var req adminRequest
	var reply adminReply
	if err := json.Unmarshal(line, &req); err != nil {
		reply.Error = "bad request: " + err.Error()
		json.NewEncoder(c).Encode(reply)
		return
	}
	switch req.Op {
	case "status":
		st := s.Status()
		reply.Status = &st
	case "reload":
		res, err := s.Reload(context.Background())
		if err != nil {
			reply.Error = err.Error()
		} else {
			reply.Reload = &res
		}
	case "reopen-logs":
		if err := s.ReopenLogs(); err != nil {
			reply.Error = err.Error()
		}
	case "trace":
		s.streamTrace(c, req.VHost)
		return
	default:
		reply.Error = fmt.Sprintf("unknown op %q (want status, reload, reopen-logs or trace)", req.Op)
	}
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	json.NewEncoder(c).Encode(reply)
}

// streamTrace writes trace lines to c until the client hangs up.
func (s *Server) streamTrace(c net.Conn, vhost string) {
	if vhost != "" && s.routes.Load().byName[vhost] == nil {
		fmt.Fprintf(c, "# no vhost named %q now; waiting for one\n", vhost)
	}
	sub := s.ops.trace.subscribe(vhost)
	defer s.ops.trace.unsubscribe(sub)
	gone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, c) // returns when the client closes
		close(gone)
	}()
	fmt.Fprintf(c, "# tracing %s\n", cmp.Or(vhost, "all vhosts"))
	var reported uint64
	var buf []byte
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-gone:
			return
		case line := <-sub.lines:
			// Batch lines into one write at most every traceFlush: a
			// wake-up and a syscall per request would cost the server
			// more than the line itself.
			buf = append(buf[:0], line...)
			time.Sleep(traceFlush)
		more:
			for len(buf) < 64<<10 {
				select {
				case l := <-sub.lines:
					buf = append(buf, l...)
				default:
					break more
				}
			}
			c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Write(buf); err != nil {
				return
			}
		case <-tick.C:
			if d := sub.dropped.Load(); d != reported {
				fmt.Fprintf(c, "# %d lines dropped (client too slow)\n", d-reported)
				reported = d
			}
		}
	}
}

// Status is a snapshot of a server for `hostd status --json` and the admin
// listener's /status.json: snake_case keys, maps keyed by name.
type Status struct {
	Version    string         `json:"version"`
	ConfigFile string         `json:"config_file"`
	Generation uint64         `json:"generation"`
	Started    time.Time      `json:"started"`
	Uptime     float64        `json:"uptime_seconds"`
	Threads    int            `json:"threads"` // OS threads of the process
	Handshakes HandshakeStats `json:"tls_handshakes"`
	Reloads    ReloadStats    `json:"reloads"`
	Requests   ServerRequests `json:"requests"`
	// VHosts are the vhosts served, by server_name.
	VHosts map[string]VHostStatus `json:"vhosts"`
	// ConfigErrors are the errors of vhost files not applied, by file:
	// vhosts kept on their previous version, or not served.
	ConfigErrors map[string][]string `json:"config_errors,omitempty"`
	// Containment is what the server enforces on the processes it starts
	// (CGI scripts, php-fpm pools); nil until a vhost enables either.
	Containment *ContainmentStatus `json:"containment,omitempty"`
}

// ContainmentStatus is what the server's process spawner enforces, as
// probed at its start (sandbox.Containment).
type ContainmentStatus struct {
	// PIDNamespace: every CGI script (but with cgi_background) and
	// php-fpm master is PID 1 of its own PID namespace, so what it starts
	// dies with it, and with hostd.
	PIDNamespace       bool   `json:"pid_namespace"`
	PIDNamespaceWhyNot string `json:"pid_namespace_why_not,omitempty"`
	// Rlimits: the cgi_* resource limits are set in every CGI process.
	Rlimits       bool   `json:"rlimits"`
	RlimitsWhyNot string `json:"rlimits_why_not,omitempty"`
}

// ReloadStats count reloads since the start.
type ReloadStats struct {
	Failed  uint64 `json:"failed"`  // refused: the main file had errors
	Partial uint64 `json:"partial"` // applied without some vhost files
}

// ServerRequests count what no vhost answered.
type ServerRequests struct {
	UnknownHost       uint64 `json:"unknown_host"` // 404: no vhost for the host name
	Misdirected       uint64 `json:"misdirected"`  // 421: Host and SNI name different vhosts
	ConnsRefusedPerIP uint64 `json:"connections_refused_per_ip"`
}

// VHostStatus is one vhost's counters.
type VHostStatus struct {
	File         string            `json:"file"`
	Mode         string            `json:"sandbox"`
	Requests     uint64            `json:"requests"`
	ByClass      map[string]uint64 `json:"by_class"` // "2xx": n
	ByCode       map[string]uint64 `json:"by_code"`  // "200": n
	Errors       uint64            `json:"errors"`   // 5xx answers
	Active       int64             `json:"active"`   // requests in progress
	Bytes        uint64            `json:"bytes"`    // kept when metrics are on
	Workers      int               `json:"workers"`  // live worker threads
	Busy         int               `json:"busy"`     // workers running a request
	Threads      uint64            `json:"threads_started"`
	HookErrors   uint64            `json:"hook_errors"`
	HookTimeouts uint64            `json:"hook_timeouts"`
	CGISpawns    uint64            `json:"cgi_spawns"`
	Redirects    uint64            `json:"https_redirects"`         // 308 to HTTPS on the plain listener
	Rejected     uint64            `json:"max_concurrent_rejected"` // 503: max_concurrent reached
	SessionErrs  uint64            `json:"session_store_errors"`
	// SharedDict is the use of the vhost's shared dictionary (hostd.shared);
	// nil without hooks.
	SharedDict *SharedDictStatus `json:"shared_dict,omitempty"`
	// ConfigErrors are set when the vhost serves its previous version
	// because its new files have errors.
	ConfigErrors []string `json:"config_errors,omitempty"`

	// PHP is the state of the vhost's php-fpm pool; nil without [php]
	// (php.go).
	PHP *PHPStatus `json:"php,omitempty"`
}

// SharedDictStatus is the use of a vhost's shared dictionary.
type SharedDictStatus struct {
	Keys     int   `json:"keys"`
	Bytes    int64 `json:"bytes"`     // keys and values counted against the budget
	MaxBytes int64 `json:"max_bytes"` // [limits] shared_dict_size
}

// Status returns the server's counters now. It is safe for concurrent use.
func (s *Server) Status() Status {
	rt := s.routes.Load()
	st := Status{
		Version:    s.version,
		ConfigFile: s.cfg.File,
		Generation: rt.gen,
		Started:    s.ops.started,
		Uptime:     time.Since(s.ops.started).Seconds(),
		Threads:    processThreads(),
		Handshakes: s.HandshakeStats(),
		Reloads:    ReloadStats{Failed: s.ops.reloadFailures.Load(), Partial: s.ops.reloadPartial.Load()},
		Requests: ServerRequests{UnknownHost: s.stats.unknownHostHTTPS.Load() + s.stats.unknownHostHTTP.Load(),
			Misdirected: s.stats.misdirected.Load(), ConnsRefusedPerIP: s.stats.admission.RefusedPerIP.Load()},
		VHosts: make(map[string]VHostStatus, len(rt.all)),
	}
	if len(rt.problems) > 0 {
		st.ConfigErrors = rt.problems
	}
	if c := s.containment.Load(); c != nil {
		st.Containment = &ContainmentStatus{PIDNamespace: c.PIDNamespace, PIDNamespaceWhyNot: c.PIDNamespaceWhyNot,
			Rlimits: c.Rlimits, RlimitsWhyNot: c.RlimitsWhyNot}
	}
	for _, v := range rt.all {
		o := &v.ops
		vs := VHostStatus{File: v.cfg.File, Mode: v.cfg.Mode, Active: o.active.Load(), Bytes: o.bytes.Load(),
			HookErrors: o.hookErrors.Load(), HookTimeouts: o.hookTimeouts.Load(), CGISpawns: o.cgiSpawns.Load(),
			Redirects: o.redirects.Load(), Rejected: v.limit.rejected.Load(), SessionErrs: o.sessionErrors.Load(),
			ByClass: map[string]uint64{}, ByCode: map[string]uint64{}, ConfigErrors: rt.problems[v.cfg.File]}
		o.codes.each(func(code int, n uint64) {
			vs.ByCode[strconv.Itoa(code)] = n
			vs.ByClass[codeClass(code)] += n
			vs.Requests += n
		})
		if n := o.codes.other.Load(); n > 0 {
			vs.ByClass["other"] += n
			vs.Requests += n
		}
		vs.Errors = vs.ByClass["5xx"]
		sb := v.sb.Stats()
		vs.Workers, vs.Busy, vs.Threads = sb.Workers, sb.Busy, sb.Started
		vs.PHP = v.phpStatus()
		if v.shared != nil {
			k, b, mb := v.shared.Usage()
			vs.SharedDict = &SharedDictStatus{Keys: k, Bytes: b, MaxBytes: mb}
		}
		st.VHosts[v.cfg.ServerName] = vs
	}
	return st
}

// AdminClient talks to a running server's admin socket.
type AdminClient struct {
	// Socket is the admin socket path (AdminSocketPath).
	Socket string
}

// ErrNoServer means no server answers on the admin socket: none is
// running with that state_dir.
var ErrNoServer = errors.New("no server is running")

// dial connects to the admin socket; a socket that is missing or that
// nobody listens on is ErrNoServer, named with its path.
func (a AdminClient) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", a.Socket)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w on %s", ErrNoServer, a.Socket)
		}
		return nil, fmt.Errorf("admin socket %s: %w", a.Socket, err)
	}
	return c, nil
}

func (a AdminClient) call(ctx context.Context, req adminRequest) (*adminReply, error) {
	c, err := a.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	var reply adminReply
	if err := json.NewDecoder(c).Decode(&reply); err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	if reply.Error != "" {
		return &reply, errors.New(reply.Error)
	}
	return &reply, nil
}

// Status fetches the server's Status.
func (a AdminClient) Status(ctx context.Context) (*Status, error) {
	r, err := a.call(ctx, adminRequest{Op: "status"})
	if err != nil {
		return nil, err
	}
	return r.Status, nil
}

// Reload asks the server to reload; the error carries the server's
// message (file:line entries, one per line) when it refused.
func (a AdminClient) Reload(ctx context.Context) (*ReloadResult, error) {
	r, err := a.call(ctx, adminRequest{Op: "reload"})
	if err != nil {
		return nil, err
	}
	return r.Reload, nil
}

// ReopenLogs asks the server to reopen its access and error logs (after
// logrotate moved them).
func (a AdminClient) ReopenLogs(ctx context.Context) error {
	_, err := a.call(ctx, adminRequest{Op: "reopen-logs"})
	return err
}

// Trace copies trace lines (one per request, vhost "" = all) to w until
// ctx is done or the server goes away.
func (a AdminClient) Trace(ctx context.Context, vhost string, w io.Writer) error {
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := json.NewEncoder(c).Encode(adminRequest{Op: "trace", VHost: vhost}); err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	_, err = io.Copy(w, c)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
