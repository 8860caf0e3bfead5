package host

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/crypto/acme/autocert"

	"github.com/hostd/hostd/host/admin"
	"github.com/hostd/hostd/tenant"
)

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
	ln, err := admin.ListenSocket(s.cfg.StateDir)
	if err != nil {
		return err
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
		go admin.Serve(s.ops.sockLn, s)
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
		metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn)})
		h := admin.Handler(s, metrics, s.logger)
		s.ops.adminSrv = &http.Server{Handler: s.adminAuth(h), ReadHeaderTimeout: 10 * time.Second, ErrorLog: s.handshakeErrorLog()}
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

// StreamTrace writes trace lines to c until the client hangs up (the
// admin socket's trace op).
func (s *Server) StreamTrace(c net.Conn, vhost string) {
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

// Status returns the server's counters now. It is safe for concurrent use.
func (s *Server) Status() admin.Status {
	rt := s.routes.Load()
	st := admin.Status{
		Version:    s.version,
		ConfigFile: s.cfg.File,
		Generation: rt.gen,
		Started:    s.ops.started,
		Uptime:     time.Since(s.ops.started).Seconds(),
		Threads:    processThreads(),
		Handshakes: s.HandshakeStats(),
		Reloads:    admin.ReloadStats{Failed: s.ops.reloadFailures.Load(), Partial: s.ops.reloadPartial.Load()},
		Requests: admin.ServerRequests{UnknownHost: s.stats.unknownHostHTTPS.Load() + s.stats.unknownHostHTTP.Load(),
			Misdirected: s.stats.misdirected.Load(), ConnsRefusedPerIP: s.stats.admission.RefusedPerIP.Load()},
		VHosts: make(map[string]admin.VHostStatus, len(rt.all)),
	}
	if len(rt.problems) > 0 {
		st.ConfigErrors = rt.problems
	}
	if c := s.containment.Load(); c != nil {
		st.Containment = &admin.ContainmentStatus{PIDNamespace: c.PIDNamespace, PIDNamespaceWhyNot: c.PIDNamespaceWhyNot,
			Rlimits: c.Rlimits, RlimitsWhyNot: c.RlimitsWhyNot}
	}
	for _, v := range rt.all {
		o := &v.ops
		vs := admin.VHostStatus{File: v.cfg.File, Mode: v.cfg.Mode, Active: o.active.Load(), Bytes: o.bytes.Load(),
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
			vs.SharedDict = &admin.SharedDictStatus{Keys: k, Bytes: b, MaxBytes: mb}
		}
		st.VHosts[v.cfg.ServerName] = vs
	}
	return st
}
