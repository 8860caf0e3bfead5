package host

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"

	"github.com/hostd/hostd/host/cgi"
	"github.com/hostd/hostd/host/logtext"
	"github.com/hostd/hostd/host/phpfpm"
	"github.com/hostd/hostd/host/session"
	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/engines"
	"github.com/hostd/hostd/scripting/outbound"
	"github.com/hostd/hostd/tenant"
)

// logSlots bounds the log-phase runs of one vhost that proceed in the
// background; more run in the request's own handler.
const logSlots = 64

// vhost is the serving state of one tenant: its certificate, its file
// gate, its hook engines and handlers. It is built from an immutable
// tenant.VHost and is safe for concurrent use.
type vhost struct {
	cfg    *tenant.VHost
	cert   *tls.Certificate
	fs     *sandbox.FS   // the tenant's file gate (gate.go): roots, then hooks and io_roots
	static *sandbox.FS   // fs restricted to the document root
	files  fileMetas     // static files' precomputed header values (filemeta.go)
	logger *slog.Logger  // server log with the vhost name
	errLog *slog.Logger  // the tenant's error log (hooks, CGI)
	errF   *logFile      // error_log file, when configured; reopened on SIGUSR1
	acc    *accessLog    // the vhost's own access_log, nil when unset (admin_logs.go)
	ops    vhostOps      // counters and drain state (metrics.go)
	limit  *vhostCounter // max_concurrent counter, shared by name across reloads (limits.go)

	// openFiles keeps static files' descriptors open ([limits]
	// open_file_cache_valid); nil when off (openfiles.go).
	openFiles *openFiles

	shared   *scripting.SharedDict
	scripts  *scripting.ScriptStore      // compiled hooks, shared with the vhost's later versions
	sessions *session.Manager            // r.session; nil without hooks (session.go)
	out      *outbound.Client            // hostd.http.request; nil without an outbound key (outbound.go)
	engines  map[string]scripting.Engine // by file extension
	hooks    [scripting.PhaseLog + 1][]hook

	sb  *sandbox.Tenant // runs the request path with the tenant's identity
	vms *vmPools        // the server's shared hook VMs; nil: VMs of the vhost's own
	cgi *cgi.Handler    // nil unless [cgi] enabled
	php *phpfpm.Pool    // nil unless [php] enabled (php.go)

	local    func(*exchange) // the server's pipeline from runHooks on, for local redirects (pipeline.go)
	logSlots chan struct{}
	logWG    sync.WaitGroup

	// checking is set on the throwaway vhosts of Check, which compile
	// every vhost's hooks on one set of VMs.
	checking bool

	respondHdr []respondHeader // [[respond]]'s header values, by entry (respond.go)

	threads *threadBudget // the server's OS thread budget (capacity.go)
	gate    *cpuGate      // the server's CPU gate, nil when off (cpugate.go)
	cpuT    *cpuTenant    // this tenant's place in it
}

func newVHost(s *Server, vc *tenant.VHost) (_ *vhost, err error) {
	v := &vhost{
		cfg:      vc,
		vms:      s.vms,
		logger:   s.logger.With("vhost", vc.ServerName),
		limit:    s.limits.counter(vc.ServerName),
		engines:  make(map[string]scripting.Engine),
		local:    s.path.local,
		logSlots: make(chan struct{}, logSlots),
		threads:  s.guard.threads,
		gate:     s.guard.cpu,
		cpuT:     s.guard.cpu.tenant(vc.ServerName),
	}
	v.respondHdr = respondHeaders(vc.Respond)
	defer func() {
		if err != nil {
			v.close()
		}
	}()
	if vc.TLSCert != "" {
		c, lerr := tls.LoadX509KeyPair(vc.TLSCert, vc.TLSKey)
		if lerr != nil {
			return nil, fmt.Errorf("certificate: %w", lerr)
		}
		v.cert = &c
	} else {
		base := filepath.Join(s.cfg.StateDir, "certs", vc.ServerName)
		if v.cert, err = loadOrCreateCert(base+".crt", base+".key", vc.Names()); err != nil {
			return nil, fmt.Errorf("certificate: %w", err)
		}
	}
	v.errLog = v.logger
	if vc.ErrorLog != "" {
		if v.errF, err = openLogFile(vc.ErrorLog, s.cfg.LogPolicy(), vc.LogGroup(), v.logger); err != nil {
			return nil, fmt.Errorf("error_log: %w", err)
		}
		// Every line escaped (host/logtext): hook messages, script errors
		// and paths are the tenant's text.
		v.errLog = slog.New(logtext.NewHandler(v.errF, nil)).With("vhost", vc.ServerName)
	}
	if v.acc, err = openVHostAccessLog(s, vc); err != nil {
		return nil, err
	}
	mode, err := sandbox.ParseMode(vc.Mode)
	if err != nil {
		return nil, err
	}
	ident := sandbox.Identity{UID: vc.UID, GID: vc.GID, Groups: vc.Groups}
	if v.sb, err = sandbox.NewTenant(sandbox.Options{
		Mode:        mode,
		Identity:    ident,
		MaxWorkers:  vc.Limits.MaxWorkers,
		IdleTimeout: vc.Limits.WorkerIdle.Std(),
		Logger:      v.logger,
		Rings:       s.rings,
		Dirs:        &s.dirs,
	}); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if v.fs, err = v.sb.NewFS(gateRoots(vc)...); err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	v.static = v.fs.Root(0)
	if d := vc.Limits.OpenFileCacheValid.Std(); d > 0 {
		v.openFiles = newOpenFiles(d, vc.Limits.OpenFileCacheMax, s.openFDs)
	}
	if vc.CGI.Enabled {
		var id *sandbox.Identity // nil: CGI runs as the server (mode none)
		if mode != sandbox.ModeNone {
			id = &ident
		}
		var errW io.Writer
		if v.errF != nil {
			errW = v.errF
		}
		v.cgi, err = cgi.New(cgi.Config{
			Root:          vc.Root,
			Extensions:    vc.CGI.Extensions,
			Interpreters:  vc.CGI.Interpreters,
			Timeout:       vc.Limits.CGITimeout.Std(),
			MaxBody:       int64(vc.Limits.MaxBody),
			Spawner:       s.spawner,
			FS:            v.static,
			Identity:      id,
			SuEXEC:        id != nil,
			MinUID:        uint32(s.cfg.MinUID()),
			Limits:        vc.Limits.CGIContainment(),
			Logger:        v.errLog,
			ErrorLog:      errW,
			LocalRedirect: http.HandlerFunc(v.serveLocal),
		})
		if err != nil {
			return nil, fmt.Errorf("cgi: %w", err)
		}
	}
	if vc.PHP.Enabled {
		if v.php, err = newPHPPool(s, v); err != nil {
			return nil, fmt.Errorf("php: %w", err)
		}
	}
	if len(vc.Hooks) > 0 {
		st := s.states.get(vc.ServerName)
		v.shared, v.scripts = st.shared, st.scripts
		v.shared.SetMaxBytes(int64(vc.Limits.SharedDictSize))
		v.scripts.SetCheckInterval(s.cfg.Server.HookCheckInterval.Std())
		if v.sessions, err = newSessions(s, vc); err != nil {
			return nil, err
		}
		if v.out, err = newOutbound(s.cfg, vc); err != nil {
			return nil, fmt.Errorf("outbound: %w", err)
		}
		if err := v.buildHooks(); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// engine returns the vhost's engine for a script extension, creating it on
// first use. Engines make their VMs lazily, so a vhost costs no VM until a
// hook runs.
func (v *vhost) engine(ext string) (scripting.Engine, error) {
	if e, ok := v.engines[ext]; ok {
		return e, nil
	}
	cfg := scripting.Config{
		Limits: scripting.Limits{
			Timeout:     v.cfg.Limits.ScriptTimeout.Std(),
			MaxMemory:   int64(v.cfg.Limits.ScriptMemory),
			MaxScript:   int(v.cfg.Limits.MaxScriptSize),
			MaxFormPart: int(v.cfg.Limits.MaxFormPart),
		},
		Shared:  v.shared,
		Scripts: v.scripts,
		Logger:  v.errLog,
		FS:      v.fs,
	}
	if v.out != nil {
		cfg.HTTP = v.out
	}
	if len(v.cfg.Hooks) > 0 {
		cfg.HookDir = filepath.Dir(v.cfg.Hooks[0].File)
	}
	// The thread modes keep VMs per tenant, touched by its threads only.
	shared := v.vms != nil && (v.checking || !sandbox.Mode(v.cfg.Mode).Switches())
	lang, ok := engines.Builtin().Lookup(ext)
	if !ok {
		return nil, fmt.Errorf("no engine for %s hooks", ext)
	}
	e := lang.New
	if shared {
		e = v.vms.pools[ext].Engine
	}
	v.engines[ext] = e(cfg)
	return v.engines[ext], nil
}

func (v *vhost) close() {
	v.logWG.Wait()
	v.openFiles.close()
	if v.php != nil {
		v.php.Close() // stops the tenant's php-fpm
	}
	if v.sb != nil {
		v.sb.Close()
	}
	for _, e := range v.engines {
		e.Close()
	}
	if v.sessions != nil {
		v.sessions.Store().Close()
	}
	if v.out != nil {
		v.out.Close()
	}
	if v.fs != nil {
		v.fs.Close()
	}
	if v.errF != nil {
		v.errF.Close()
	}
	if v.acc != nil {
		v.acc.Close()
	}
}

// run runs fn with the tenant's identity, per the vhost's sandbox mode.
// In the modes that hold an OS thread for it, the thread counts against
// server.max_threads (capacity.go).
func (v *vhost) run(ctx context.Context, fn func()) error {
	if holdsThread(v.cfg.Mode) {
		if err := v.threads.acquire(ctx); err != nil {
			return err
		}
		defer v.threads.release()
	}
	return v.sb.Run(ctx, fn)
}
