package phpfpm

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hostd/hostd/host/cgi"
	"github.com/hostd/hostd/host/fastcgi"
	"github.com/hostd/hostd/sandbox"
)

// DirName is the directory under state_dir that holds the pools' sockets
// and pool files.
const DirName = "php-fpm"

// Defaults for Config, and of the [php] keys that set it (tenant takes
// them from here). MaxBody's is cgi.DefaultMaxBody.
const (
	DefaultExtension   = ".php"
	DefaultWorkers     = 4
	DefaultMaxRequests = 500
	DefaultIdleTimeout = 10 * time.Second
	DefaultPoolIdle    = 10 * time.Minute
	DefaultTimeout     = 30 * time.Second
	DefaultTmpDir      = "/tmp"
)

const (
	// minUptime is how long a master must live for its death not to count
	// as a failed start; after maxQuickDeaths of those in a row the pool
	// backs off instead of restarting at once.
	minUptime      = time.Second
	maxQuickDeaths = 3
	backoffMin     = 500 * time.Millisecond
	backoffMax     = 30 * time.Second
	stopTimeout    = 5 * time.Second
	// maxSocketPath is the longest unix socket path (sun_path less NUL).
	maxSocketPath = 107
)

// Errors returned by Pool methods (possibly wrapped).
var (
	// ErrClosed means the pool was closed (its vhost was removed).
	ErrClosed = errors.New("phpfpm: pool closed")
	// ErrUnavailable means the pool's php-fpm keeps failing to start and
	// is backing off.
	ErrUnavailable = errors.New("phpfpm: pool unavailable")
)

// Pool states, as Stats reports them.
const (
	StateIdle    = "idle"    // no process: not used yet, or stopped after pool_idle
	StateRunning = "running" // the master is up
	StateFailed  = "failed"  // the master died at start; retried after a back-off
	StateClosed  = "closed"  // the vhost is gone
)

// Manager creates the pools of one server. It is safe for concurrent use.
type Manager struct {
	dir     string
	spawner *sandbox.Spawner
	seq     atomic.Uint64
}

// NewManager returns a Manager whose pools keep their sockets and pool
// files in stateDir/php-fpm and start php-fpm through spawner. It creates
// nothing until a pool starts.
func NewManager(stateDir string, spawner *sandbox.Spawner) *Manager {
	return &Manager{dir: filepath.Join(stateDir, DirName), spawner: spawner}
}

// Config configures one tenant's pool.
type Config struct {
	// Name is the vhost's server name, the pool's name in php-fpm.
	Name string
	// Identity is the tenant's: the master and its workers run with it.
	// Root (uid or gid 0) is refused.
	Identity sandbox.Identity
	// Root is the document root: DOCUMENT_ROOT, the workers' directory and
	// the first entry of open_basedir.
	Root string
	// FS is the vhost's file gate, whose first root is Root: script
	// lookups go through it. Required.
	FS *sandbox.FS
	// FPM is the php-fpm binary. Required.
	FPM string
	// Extensions are the script extensions (default [".php"]), also
	// security.limit_extensions.
	Extensions []string
	// Workers is pm.max_children and the most FastCGI connections hostd
	// keeps to the pool (default 4).
	Workers int
	// MaxRequests is pm.max_requests (default 500); -1 writes 0 (never
	// recycle).
	MaxRequests int
	// IdleTimeout is pm.process_idle_timeout (default 10s).
	IdleTimeout time.Duration
	// PoolIdle stops the master after this long without a request
	// (default 10m).
	PoolIdle time.Duration
	// Timeout bounds one request (default 30s); also
	// request_terminate_timeout.
	Timeout time.Duration
	// TmpDir is upload_tmp_dir, sys_temp_dir and session.save_path, and
	// the second entry of open_basedir (default "/tmp").
	TmpDir string
	// Settings are php_admin_value / php_admin_flag entries; "on" and "off"
	// values are written as flags. They override the defaults above.
	Settings map[string]string
	// MaxBody is the largest request body passed to PHP (default 1 MiB).
	MaxBody int64
	// Logger receives the pool's own events (starts, deaths, refused
	// requests); nil discards them.
	Logger *slog.Logger
	// ErrorLog is the tenant's error log: PHP's messages (FCGI_STDERR) and
	// php-fpm's own log lines go there, one escaped line per message. nil
	// sends them to Logger.
	ErrorLog io.Writer
	// LocalRedirect re-dispatches a local redirect (see cgi.LocalRedirect).
	LocalRedirect http.Handler
}

// Stats is a snapshot of a pool.
type Stats struct {
	State    string // StateIdle, StateRunning, StateFailed or StateClosed
	PID      int    // the master's pid while running, else 0
	Starts   uint64 // masters started
	Crashes  uint64 // masters that died without being stopped by hostd
	Requests uint64 // FastCGI requests sent
	Busy     int    // connections carrying a request
	Idle     int    // kept connections
}

// Pool is one tenant's php-fpm pool and the FastCGI client to it. It is
// safe for concurrent use.
type Pool struct {
	cfg     Config
	m       *Manager
	sock    string // listening socket path
	conf    string // pool file path
	client  *fastcgi.Client
	envCfg  cgi.EnvConfig
	logger  *slog.Logger
	starts  atomic.Uint64
	crashes atomic.Uint64

	mu        sync.Mutex
	state     string
	ln        *os.File // the listening socket while the pool is up
	proc      *process
	stop      chan struct{} // closed to stop the supervisor
	supDone   chan struct{} // closed when the supervisor returned
	failUntil time.Time
	backoff   time.Duration
	quick     int // masters in a row that died within minUptime
	active    int
	lastUse   time.Time
}

// NewPool validates cfg and returns a pool that starts nothing until its
// first request.
func (m *Manager) NewPool(cfg Config) (*Pool, error) {
	if cfg.FPM == "" || !filepath.IsAbs(cfg.FPM) {
		return nil, fmt.Errorf("phpfpm: config: FPM %q must be an absolute path", cfg.FPM)
	}
	if cfg.Root == "" || !filepath.IsAbs(cfg.Root) {
		return nil, fmt.Errorf("phpfpm: config: Root %q must be an absolute path", cfg.Root)
	}
	if cfg.FS == nil {
		return nil, errors.New("phpfpm: config: FS (the vhost's file gate) is required")
	}
	if id := cfg.Identity; id.UID == 0 || id.GID == 0 || slices.Contains(id.Groups, 0) {
		return nil, fmt.Errorf("phpfpm: config: refusing identity %d:%d (root)", id.UID, id.GID)
	}
	if m.spawner == nil {
		return nil, errors.New("phpfpm: config: the manager has no spawner")
	}
	cfg.Extensions = slices.Clone(cfg.Extensions)
	if len(cfg.Extensions) == 0 {
		cfg.Extensions = []string{DefaultExtension}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.MaxRequests == 0 {
		cfg.MaxRequests = DefaultMaxRequests
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.PoolIdle <= 0 {
		cfg.PoolIdle = DefaultPoolIdle
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.TmpDir == "" {
		cfg.TmpDir = DefaultTmpDir
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = cgi.DefaultMaxBody
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Root = filepath.Clean(cfg.Root)
	id := m.seq.Add(1)
	p := &Pool{
		cfg:    cfg,
		m:      m,
		sock:   filepath.Join(m.dir, fmt.Sprintf("%d.sock", id)),
		conf:   filepath.Join(m.dir, fmt.Sprintf("%d.conf", id)),
		envCfg: cgi.EnvConfig{Root: cfg.Root},
		logger: cfg.Logger,
		state:  StateIdle,
	}
	if len(p.sock) > maxSocketPath {
		return nil, fmt.Errorf("phpfpm: socket path %s is longer than %d bytes: use a shorter state_dir", p.sock, maxSocketPath)
	}
	// One connection per request: pm = ondemand counts a worker waiting
	// on a kept connection as idle and would not start another for a
	// new one (TestPHPColdPoolConcurrent).
	p.client = fastcgi.New(fastcgi.Config{Dial: p.dial, MaxConns: cfg.Workers, OneShot: true})
	return p, nil
}

// Resolve maps a URL path to a PHP script under the root (see
// cgi.Resolve): cgi.ErrNotScript and cgi.ErrNotFound mean the path is not
// PHP's, cgi.ErrForbidden that it must be refused.
func (p *Pool) Resolve(urlPath string) (cgi.Script, error) {
	return cgi.Resolve(p.cfg.FS, urlPath, p.cfg.Extensions)
}

// Stats returns the pool's state and counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	st := Stats{State: p.state}
	if p.proc != nil && p.state == StateRunning {
		st.PID = p.proc.pid
	}
	p.mu.Unlock()
	cs := p.client.Stats()
	st.Starts, st.Crashes = p.starts.Load(), p.crashes.Load()
	st.Requests, st.Busy, st.Idle = cs.Requests, cs.Busy, cs.Idle
	return st
}

// Close stops the pool's php-fpm (its whole process group) and removes its
// socket and pool file. Requests still in progress fail. Close is
// idempotent.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.state == StateClosed {
		p.mu.Unlock()
		return
	}
	p.state = StateClosed
	stop, done := p.stop, p.supDone
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	p.client.Close()
}

// begin registers a request, starting the pool when it is not running.
func (p *Pool) begin() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.state {
	case StateClosed:
		return ErrClosed
	case StateFailed:
		if time.Now().Before(p.failUntil) {
			return ErrUnavailable
		}
		fallthrough
	case StateIdle:
		// Files and the spawn need the server's identity; the request may
		// run on a tenant thread, so start from a fresh goroutine (never
		// on a switched thread).
		errc := make(chan error, 1)
		go func() { errc <- p.startLocked() }()
		if err := <-errc; err != nil {
			p.failLocked()
			p.logger.Error("php: pool failed to start", "err", err)
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	p.active++
	p.lastUse = time.Now()
	return nil
}

// end unregisters a request.
func (p *Pool) end() {
	p.mu.Lock()
	p.active--
	p.lastUse = time.Now()
	p.mu.Unlock()
}

// failLocked marks the pool failed and sets the back-off before the next
// start.
func (p *Pool) failLocked() {
	p.backoff = min(max(2*p.backoff, backoffMin), backoffMax)
	p.failUntil = time.Now().Add(p.backoff)
	p.state = StateFailed
}

// startLocked creates the socket and the pool file, starts the master and
// its supervisor. p.mu is held by the caller.
func (p *Pool) startLocked() error {
	if err := os.MkdirAll(p.m.dir, 0o700); err != nil {
		return fmt.Errorf("phpfpm: %w", err)
	}
	// The directory must be the server's alone: it is what keeps tenants
	// off the sockets. A symlink or someone else's directory is refused.
	if fi, err := os.Lstat(p.m.dir); err != nil {
		return fmt.Errorf("phpfpm: %w", err)
	} else if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("phpfpm: %s must be a directory owned by the server (uid %d)", p.m.dir, os.Geteuid())
	}
	if err := os.Chmod(p.m.dir, 0o700); err != nil {
		return fmt.Errorf("phpfpm: %w", err)
	}
	if err := os.WriteFile(p.conf, []byte(p.poolFile()), 0o644); err != nil {
		return fmt.Errorf("phpfpm: pool file: %w", err)
	}
	ln, err := listenUnix(p.sock)
	if err != nil {
		return fmt.Errorf("phpfpm: %w", err)
	}
	proc, err := p.spawn(ln)
	if err != nil {
		ln.Close()
		os.Remove(p.sock)
		return err
	}
	p.ln, p.proc, p.state = ln, proc, StateRunning
	p.stop, p.supDone = make(chan struct{}), make(chan struct{})
	go p.supervise(proc, p.stop, p.supDone)
	return nil
}

// teardownLocked closes and removes the socket and the pool file.
func (p *Pool) teardownLocked() {
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	os.Remove(p.sock)
	os.Remove(p.conf)
	p.proc = nil
	p.client.CloseIdle()
}

// supervise watches one running period of the pool: it restarts a master
// that died, stops an idle pool, and stops the pool on Close.
func (p *Pool) supervise(proc *process, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(min(max(p.cfg.PoolIdle/4, 10*time.Millisecond), 30*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-proc.exited:
			p.mu.Lock()
			if p.state == StateClosed {
				p.teardownLocked()
				p.mu.Unlock()
				return
			}
			p.crashes.Add(1)
			up := time.Since(proc.started)
			p.logger.Warn("php: pool master died", "pid", proc.pid, "status", proc.status(), "uptime", up.Round(time.Millisecond))
			p.client.CloseIdle()
			if up < minUptime {
				p.quick++
			} else {
				p.quick, p.backoff = 0, 0
			}
			if p.quick >= maxQuickDeaths {
				p.logger.Error("php: pool keeps dying at start, backing off", "deaths", p.quick)
				p.quick = 0
				p.failLocked()
				p.teardownLocked()
				p.mu.Unlock()
				return
			}
			np, err := p.spawn(p.ln)
			if err != nil {
				p.logger.Error("php: pool restart failed", "err", err)
				p.failLocked()
				p.teardownLocked()
				p.mu.Unlock()
				return
			}
			proc, p.proc = np, np
			p.mu.Unlock()
		case <-tick.C:
			p.mu.Lock()
			if p.active > 0 || time.Since(p.lastUse) < p.cfg.PoolIdle {
				p.mu.Unlock()
				continue
			}
			// Idle: stop while holding the lock, so that a request
			// arriving now starts a fresh pool afterwards.
			proc.stop()
			p.teardownLocked()
			p.state = StateIdle
			p.logger.Info("php: pool stopped after pool_idle", "idle", p.cfg.PoolIdle)
			p.mu.Unlock()
			return
		case <-stop:
			proc.stop()
			p.mu.Lock()
			p.teardownLocked()
			p.mu.Unlock()
			return
		}
	}
}
