package host

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	return s.setupACME(cfg)
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
		reg.MustRegister(newMetricsCollector(s))
		reg.MustRegister(phpCollector{s}) // php.go
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /status", s.serveStatusPage)
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/status", http.StatusFound)
		})
		s.ops.adminSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: s.handshakeErrorLog()}
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
	Op    string `json:"op"`              // status | reload | trace
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
	case "trace":
		s.streamTrace(c, req.VHost)
		return
	default:
		reply.Error = fmt.Sprintf("unknown op %q (want status, reload or trace)", req.Op)
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

// Status is a snapshot of a server for `hostd status`.
type Status struct {
	ConfigFile string         `json:"config_file"`
	Generation uint64         `json:"generation"`
	Started    time.Time      `json:"started"`
	Threads    int            `json:"threads"` // OS threads of the process
	Handshakes HandshakeStats `json:"handshakes"`
	Reloads    struct {
		Failed uint64 `json:"failed"`
	} `json:"reloads"`
	VHosts []VHostStatus `json:"vhosts"`
}

// VHostStatus is one vhost's counters.
type VHostStatus struct {
	Name         string    `json:"name"`
	Mode         string    `json:"sandbox"`
	Requests     uint64    `json:"requests"`
	ByClass      [6]uint64 `json:"by_class"` // other, 1xx, 2xx, 3xx, 4xx, 5xx
	Errors       uint64    `json:"errors"`   // 5xx answers
	Active       int64     `json:"active"`   // requests in progress
	Bytes        uint64    `json:"bytes"`    // kept when metrics are on
	Workers      int       `json:"workers"`  // live worker threads
	Busy         int       `json:"busy"`     // workers running a request
	Threads      uint64    `json:"threads_started"`
	HookErrors   uint64    `json:"hook_errors"`
	HookTimeouts uint64    `json:"hook_timeouts"`
	CGISpawns    uint64    `json:"cgi_spawns"`

	// PHP is the state of the vhost's php-fpm pool; nil without [php]
	// (php.go).
	PHP *PHPStatus `json:"php,omitempty"`
}

// Status returns the server's counters now. It is safe for concurrent use.
func (s *Server) Status() Status {
	rt := s.routes.Load()
	st := Status{
		ConfigFile: s.cfg.File,
		Generation: rt.gen,
		Started:    s.ops.started,
		Threads:    processThreads(),
		Handshakes: s.HandshakeStats(),
		VHosts:     make([]VHostStatus, 0, len(rt.all)),
	}
	st.Reloads.Failed = s.ops.reloadFailures.Load()
	for _, v := range rt.all {
		o := &v.ops
		vs := VHostStatus{Name: v.cfg.ServerName, Mode: v.cfg.Mode, Active: o.active.Load(), Bytes: o.bytes.Load(),
			HookErrors: o.hookErrors.Load(), HookTimeouts: o.hookTimeouts.Load(), CGISpawns: o.cgiSpawns.Load()}
		for i := range o.byClass {
			vs.ByClass[i] = o.byClass[i].Load()
			vs.Requests += vs.ByClass[i]
		}
		vs.Errors = vs.ByClass[5]
		sb := v.sb.Stats()
		vs.Workers, vs.Busy, vs.Threads = sb.Workers, sb.Busy, sb.Started
		vs.PHP = v.phpStatus()
		st.VHosts = append(st.VHosts, vs)
	}
	return st
}

// AdminClient talks to a running server's admin socket.
type AdminClient struct {
	// Socket is the admin socket path (AdminSocketPath).
	Socket string
}

func (a AdminClient) call(ctx context.Context, req adminRequest) (*adminReply, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", a.Socket)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w (is hostd serving this configuration?)", err)
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

// Trace copies trace lines (one per request, vhost "" = all) to w until
// ctx is done or the server goes away.
func (a AdminClient) Trace(ctx context.Context, vhost string, w io.Writer) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", a.Socket)
	if err != nil {
		return fmt.Errorf("admin socket: %w (is hostd serving this configuration?)", err)
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
