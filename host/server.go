package host

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostd/hostd/host/admin"
	"github.com/hostd/hostd/host/admission"
	"github.com/hostd/hostd/host/phpfpm"
	"github.com/hostd/hostd/host/tickets"
	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/tenant"
)

// Options configures a Server. The zero value works.
type Options struct {
	// Logger receives server errors (default: discard).
	Logger *slog.Logger
	// SkipBroken starts without the vhosts that fail to build (their
	// certificate or document root cannot be loaded) instead of failing;
	// they are logged and listed by Status. Broken are vhost files
	// Validate refused, to be listed the same way.
	SkipBroken bool
	Broken     []*tenant.Broken
	// Build identifies the binary in Status and the hostd_build_info
	// metric (zero: what the Go toolchain stamped into it).
	Build BuildInfo
}

// Server serves one configuration over HTTPS and, optionally, plain HTTP.
// Its methods are safe for concurrent use.
type Server struct {
	cfg    *tenant.Config
	logger *slog.Logger
	access *accessLog

	build   BuildInfo
	version string // build.String()

	spawner     *sandbox.Spawner                    // nil unless a vhost enables CGI or PHP
	containment atomic.Pointer[sandbox.Containment] // the spawner's, for Status
	php         *phpfpm.Manager                     // the php-fpm pools' manager, made on first use (php.go)
	phpOnce     sync.Once
	rings       *sandbox.Rings // nil unless a vhost uses mode uring (gate.go)
	vms         *vmPools       // hook VMs shared by the vhosts that do not switch threads (gate.go)
	dirs        sandbox.Dirs   // the vhosts' gate roots, each directory open once
	routes      atomic.Pointer[routes]
	defaultCert *tls.Certificate
	tlsConfig   *tls.Config
	tlsOther    *tls.Config // tlsConfig with the other tls_profile (tlsprofile.go)

	httpsSrv, httpSrv *http.Server // httpsSrv serves HTTP/2 (and ACME's TLS-ALPN-01) only
	httpsLn, httpLn   net.Listener
	h2ln              *connListener // the HTTPS connections that chose h2, for httpsSrv (tlsserve.go)
	h1                h1Conns       // the HTTPS connections served by hostd's HTTP/1.1 path (h1.go)
	httpsPort         string

	stats serverStats

	path pipeline // the request path: route, track, limit, tenant, hooks, respond (pipeline.go)

	tickets *tickets.Keys         // session ticket keys in state_dir (host/tickets)
	ocsp    *ocspStapler          // OCSP staples of certificates that name a responder (ocsp.go)
	admit   *admission.Controller // overload protection of the HTTPS listener (host/admission)
	limits  vhostLimits           // per-vhost max_concurrent (limits.go)
	openFDs *fdBudget             // descriptors the vhosts' open-file caches may keep (openfiles.go)

	ops serverOps // reload, admin socket, metrics, trace (admin.go, reload.go)

	sessMem memoryStores // memory session stores, kept across reloads (session.go)
	states  tenantStates // shared dictionaries and compiled hooks, kept across reloads (state.go)
	guard   guardState   // sealing secrets, admin token, redaction, thread and CPU budgets (guard.go)

	closeOnce sync.Once
}

// New prepares a server for cfg: it loads or generates every vhost's
// certificate and opens the document roots. It binds nothing; call Listen.
func New(cfg *tenant.Config, opts Options) (*Server, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, logger: logger, build: opts.Build.ReadBuildInfo(), vms: newVMPools(), openFDs: newFDBudget()}
	s.version = s.build.String()
	s.path = s.newPipeline()
	access, err := openAccessLog(cfg.AccessLog, cfg.LogPolicy(), -1, logger)
	if err != nil {
		return nil, err
	}
	s.access = access
	s.defaultCert, err = loadOrCreateCert(filepath.Join(cfg.StateDir, "certs", "_default.crt"),
		filepath.Join(cfg.StateDir, "certs", "_default.key"), []string{"hostd.invalid"})
	if err != nil {
		s.access.Close()
		return nil, fmt.Errorf("default certificate: %w", err)
	}
	if err := s.initGuard(cfg); err != nil { // guard.go
		s.access.Close()
		return nil, err
	}
	s.access.redact = s.guard.redact
	s.ops.trace.redact = s.guard.redact
	// Start-up is a reload from an empty configuration (reload.go).
	s.routes.Store(emptyRoutes(cfg))
	res, err := s.apply(context.Background(), cfg, opts.Broken, !opts.SkipBroken)
	if err != nil {
		s.Close()
		return nil, err
	}
	logNotServed(logger, res, opts.Broken)
	if err := s.initOps(cfg); err != nil {
		s.Close()
		return nil, err
	}
	s.tlsConfig = &tls.Config{
		GetCertificate:   s.getCertificate,
		NextProtos:       []string{"h2", "http/1.1", acmeALPN}, // acmeALPN: TLS-ALPN-01 (acme.go)
		VerifyConnection: s.countHandshake,
	}
	applyTLSProfile(s.tlsConfig, cfg.Server.TLSProfile)
	tickets.BindToVHost(s.tlsConfig, s.ticketVHost, func() { s.guard.ticketMismatch.Add(1) })
	s.tlsOther = s.tlsConfig.Clone()
	applyTLSProfile(s.tlsOther, otherProfile(cfg.Server.TLSProfile))
	s.tlsConfig.GetConfigForClient = s.configForClient
	s.tickets = tickets.New(filepath.Join(cfg.StateDir, "ticket.keys"), cfg.Server.TicketRotation.Std(), logger)
	if err := s.tickets.Apply(time.Now(), s.tlsConfig, s.tlsOther); err != nil {
		s.Close()
		return nil, err
	}
	s.admit = admission.New(&cfg.Server, &s.stats.admission, logger)
	s.ocsp = newOCSPStapler(cfg.StateDir, logger)

	errLog := s.handshakeErrorLog()
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	s.httpsSrv = s.newHTTPServer(s.serveHTTPS, errLog)
	s.httpsSrv.TLSConfig = s.tlsConfig
	s.httpsSrv.Protocols = &protocols
	// The protocol's default frame size (net/http would advertise 1 MiB): a
	// peer's larger HEADERS or DATA frame is a FRAME_SIZE_ERROR (h2spec 4.2/3).
	s.httpsSrv.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: s.h2MaxStreams(), MaxReadFrameSize: 16 << 10} // capacity.go
	if cfg.Server.ListenHTTP != "" {
		s.httpSrv = s.newHTTPServer(s.serveHTTP, errLog)
	}
	return s, nil
}

// newHTTPServer returns an http.Server for h with the configured timeouts
// and header limit (every listener bounds slow clients the same way).
func (s *Server) newHTTPServer(h http.HandlerFunc, errLog *log.Logger) *http.Server {
	sc := &s.cfg.Server
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: sc.ReadHeaderTimeout.Std(),
		ReadTimeout:       sc.ReadTimeout.Std(),
		// write_timeout is per write progress: withProgressTimeout (capacity.go)
		IdleTimeout:    sc.IdleTimeout.Std(),
		MaxHeaderBytes: int(sc.MaxHeaderBytes),
		ErrorLog:       errLog,
	}
}

// logNotServed logs the vhosts start-up leaves out (SkipBroken) because
// they failed to build; the files Validate refused were reported already.
func logNotServed(logger *slog.Logger, res admin.ReloadResult, broken []*tenant.Broken) {
	for _, c := range res.VHosts {
		if c.Action != admin.ChangeNotAdded || slices.ContainsFunc(broken, func(b *tenant.Broken) bool { return b.File == c.File }) {
			continue
		}
		logger.Error("vhost not served", "file", c.File, "err", strings.Join(c.Errors, "\n"))
	}
}

func (s *Server) closeRoutes(rt *routes) {
	for _, v := range rt.all {
		v.close()
	}
}

// Listen binds the configured listeners. It is separate from Serve so that
// privileges can be dropped after binding and before serving.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.Server.ListenHTTPS)
	if err != nil {
		return fmt.Errorf("listen_https: %w", err)
	}
	// Admission outermost: its certificate hook finds its *admitConn as
	// the ClientHello's conn; the write progress deadline inside it.
	s.httpsLn = s.admit.Wrap(withProgressTimeout(withRawIO(ln), s.cfg.Server.WriteTimeout.Std())) // capacity.go, rawconn_linux.go
	_, s.httpsPort, _ = net.SplitHostPort(ln.Addr().String())
	s.h2ln = newConnListener(ln.Addr())
	if s.httpSrv != nil {
		ln, err := net.Listen("tcp", s.cfg.Server.ListenHTTP)
		if err != nil {
			s.httpsLn.Close()
			return fmt.Errorf("listen_http: %w", err)
		}
		s.httpLn = withProgressTimeout(ln, s.cfg.Server.WriteTimeout.Std())
	}
	if err := s.listenOps(); err != nil {
		s.httpsLn.Close()
		if s.httpLn != nil {
			s.httpLn.Close()
		}
		return err
	}
	return nil
}

// HTTPSAddr returns the bound HTTPS address (after Listen).
func (s *Server) HTTPSAddr() string { return s.httpsLn.Addr().String() }

// HTTPAddr returns the bound plain HTTP address, or "" when it is off.
func (s *Server) HTTPAddr() string {
	if s.httpLn == nil {
		return ""
	}
	return s.httpLn.Addr().String()
}

// Serve serves until ctx is done, then shuts down gracefully: listeners
// close at once, in-flight requests get server.shutdown_timeout to finish.
func (s *Server) Serve(ctx context.Context) error {
	if s.httpsLn == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	errc := make(chan error, 3)
	// hostd's accept loop does the handshakes; HTTP/2 goes on to
	// net/http through h2ln, HTTP/1.x to hostd's own path (tlsserve.go).
	go func() { errc <- s.httpsSrv.Serve(s.h2ln) }()
	go func() { errc <- s.acceptTLS(s.httpsLn) }()
	ticketsCtx, stopTickets := context.WithCancel(ctx)
	defer stopTickets()
	go s.tickets.Run(ticketsCtx, s.tlsConfig, s.tlsOther)
	go s.ocsp.run(ticketsCtx)
	go s.runGuard(ticketsCtx)
	n := 2
	if s.httpLn != nil {
		n++
		go func() { errc <- s.httpSrv.Serve(s.httpLn) }()
	}
	s.startOps()
	rt := s.routes.Load()
	s.logger.Info("serving", "https", s.HTTPSAddr(), "http", s.HTTPAddr(), "vhosts", len(rt.all))
	s.notify(notifyReady)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
		n--
	}
	s.notify(notifyStopping)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Server.ShutdownTimeout.Std())
	defer cancel()
	s.h1.closing.Store(true)
	s.httpsLn.Close() // ends acceptTLS
	var h1err error
	h1done := make(chan struct{})
	go func() { h1err = s.h1.shutdown(shutdownCtx); close(h1done) }()
	err := s.httpsSrv.Shutdown(shutdownCtx)
	if s.httpSrv != nil {
		err = errors.Join(err, s.httpSrv.Shutdown(shutdownCtx))
	}
	<-h1done
	err = errors.Join(err, h1err)
	if err != nil {
		// The grace period is over: cut what is left (clients that keep
		// an idle HTTP/2 connection open after GOAWAY, stuck requests).
		s.logger.Warn("shutdown timeout: closing the remaining connections", "timeout", s.cfg.Server.ShutdownTimeout.Std())
		s.httpsSrv.Close()
		s.h1.closeAll()
		if s.httpSrv != nil {
			s.httpSrv.Close()
		}
	}
	for ; n > 0; n-- {
		if e := <-errc; !errors.Is(e, http.ErrServerClosed) && serveErr == nil {
			serveErr = e
		}
	}
	s.Close()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", serveErr)
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	s.logger.Info("stopped")
	return nil
}

// Close releases the vhosts' resources and the access log. Serve calls it.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.closeOps()
		if rt := s.routes.Load(); rt != nil {
			s.closeRoutes(rt)
		}
		if s.spawner != nil {
			s.spawner.Close()
		}
		if s.rings != nil {
			s.rings.Close()
		}
		s.vms.close()
		s.access.Close()
	})
}

// ticketVHost names the vhost a connection with SNI sni is for, "-" for
// the default certificate: the vhost its session tickets are bound to.
func (s *Server) ticketVHost(sni string) string {
	if v := s.routes.Load().lookup(canonicalHost(sni)); v != nil {
		return v.cfg.ServerName
	}
	return "-"
}

func (s *Server) getCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if err := s.admit.CertificateHook(hello); err != nil {
		return nil, err
	}
	if v := s.routes.Load().lookup(canonicalHost(hello.ServerName)); v != nil {
		if v.cfg.TLS == "acme" {
			c, err := s.acmeCertificate(hello, v) // acme.go
			if err != nil {
				return nil, err
			}
			return s.ocsp.staple(c), nil
		}
		return s.ocsp.staple(v.cert), nil
	}
	return s.defaultCert, nil
}

// httpError writes a short plain-text error page. msg is a fixed,
// client-safe sentence, never an internal error.
func httpError(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintf(w, "%s %s: %s\n", strconv.Itoa(code), http.StatusText(code), msg)
}
