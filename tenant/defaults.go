package tenant

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/hostd/hostd/host/cgi"
	"github.com/hostd/hostd/host/phpfpm"
	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/scripting"
)

// Defaults of the [server] keys (config.go documents each key). A zero
// value in a Server means the default; the loader applies these (and
// WithDefaults does) before it validates. Keys whose default depends on
// where the files are (state_dir's session_keys and admin_token_file),
// on the machine (default_sandbox) or on whether the key is present
// (write_timeout: "0s" means none) are resolved by the loader.
const (
	// DefaultStateDir is server.state_dir, relative to the main file.
	DefaultStateDir = "state"
	// DefaultVHosts is server.vhosts, relative to the main file.
	DefaultVHosts            = "vhosts.d/*.toml"
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 60 * time.Second
	// DefaultWriteTimeout is server.write_timeout: a client that takes
	// no response bytes for this long is dropped.
	DefaultWriteTimeout    = 60 * time.Second
	DefaultIdleTimeout     = 120 * time.Second
	DefaultShutdownTimeout = 10 * time.Second
	DefaultMaxHeaderBytes  = 64 << 10
	// DefaultAcceptRate is server.accept_rate, per CPU.
	DefaultAcceptRate         = 1000
	DefaultMaxConnsPerIP      = 512
	DefaultHandshakeWait      = 2 * time.Second
	DefaultTicketRotation     = 24 * time.Hour
	DefaultSessionKeyRotation = 24 * time.Hour
	// DefaultMaxThreads is server.max_threads.
	DefaultMaxThreads = 4096
	// DefaultTenantCPUShare is server.tenant_cpu_share.
	DefaultTenantCPUShare = 0.5
)

// DefaultMaxHandshakes is server.max_handshakes: four per CPU.
func DefaultMaxHandshakes() int { return 4 * runtime.GOMAXPROCS(0) }

// Defaults of a vhost's keys. The keys that configure a lower layer's
// option take that option's default (scripting.Default*,
// sandbox.DefaultIdleTimeout, cgi.Default*, phpfpm.Default*; [sessions]
// keys stay zero, which session.Options reads as its defaults), so each
// number is written once.
const (
	DefaultMaxConcurrent = 256
	DefaultMaxResponse   = 16 << 20
	DefaultCGIMemory     = 512 << 20
	DefaultCGIProcesses  = 512
	DefaultCGIOpenFiles  = 1024
	DefaultCGIGrace      = 2 * time.Second
	DefaultMaxRanges     = 16
	// DefaultOpenFileCacheMax is [limits] open_file_cache_max.
	DefaultOpenFileCacheMax = 1000
	// maxScriptSize bounds [limits] max_script_size.
	maxScriptSize = 16 << 20
)

// DefaultMaxWorkers is [limits] max_workers when a vhost sets none: four
// worker threads per CPU (at least 4), so that one tenant's hooks cannot
// hold many more threads than there are CPUs to run them.
func DefaultMaxWorkers() int { return max(4, 4*runtime.NumCPU()) }

// DefaultPerClient is [limits] max_concurrent_per_client for a vhost's
// max_concurrent (-1: unlimited).
func DefaultPerClient(maxConcurrent int) int {
	if maxConcurrent <= 0 {
		return -1
	}
	return max(4, maxConcurrent/8)
}

// DefaultIndex is a vhost's index when it sets none.
var DefaultIndex = []string{"index.html"}

// WithDefaults sets every zero key of the configuration that has a fixed
// default to it: the [server] table and each vhost's own keys and
// [limits]. Load applies the same defaults to each table as it reads it,
// so a Config built in code and passed through WithDefaults looks like a
// loaded one in these keys.
func (c *Config) WithDefaults() {
	c.Server.setDefaults()
	for _, v := range c.VHosts {
		v.setDefaults()
	}
}

func setDuration(d *Duration, def time.Duration) {
	if *d == 0 {
		*d = Duration(def)
	}
}

func setInt[T ~int | ~int64 | ~float64](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

func (s *Server) setDefaults() {
	if s.StateDir == "" {
		s.StateDir = DefaultStateDir
	}
	if s.VHosts == "" {
		s.VHosts = DefaultVHosts
	}
	if s.TLSProfile == "" {
		s.TLSProfile = TLSIntermediate
	}
	setDuration(&s.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDuration(&s.ReadTimeout, DefaultReadTimeout)
	setDuration(&s.IdleTimeout, DefaultIdleTimeout)
	setDuration(&s.ShutdownTimeout, DefaultShutdownTimeout)
	setInt(&s.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setInt(&s.MaxHandshakes, DefaultMaxHandshakes())
	setInt(&s.AcceptRate, DefaultAcceptRate)
	setInt(&s.MaxConnsPerIP, DefaultMaxConnsPerIP)
	setDuration(&s.HandshakeWait, DefaultHandshakeWait)
	setDuration(&s.TicketRotation, DefaultTicketRotation)
	setDuration(&s.SessionKeyRotation, DefaultSessionKeyRotation)
	if s.LogRedactQuery == nil {
		d := DefaultRedactQuery
		s.LogRedactQuery = &d
	}
	setInt(&s.MaxThreads, DefaultMaxThreads)
	setInt(&s.TenantCPUShare, DefaultTenantCPUShare)
}

func (v *VHost) setDefaults() {
	if len(v.Index) == 0 {
		v.Index = slices.Clone(DefaultIndex)
	}
	if len(v.CGI.Extensions) == 0 {
		v.CGI.Extensions = []string{cgi.DefaultExtension}
	}
	v.PHP.setDefaults()
	v.Limits.setDefaults()
}

func (l *Limits) setDefaults() {
	setInt(&l.MaxWorkers, DefaultMaxWorkers())
	setInt(&l.MaxConcurrent, DefaultMaxConcurrent)
	setInt(&l.MaxConcurrentPerClient, DefaultPerClient(l.MaxConcurrent))
	setDuration(&l.WorkerIdle, sandbox.DefaultIdleTimeout)
	setDuration(&l.ScriptTimeout, scripting.DefaultTimeout)
	setInt(&l.ScriptMemory, scripting.DefaultMaxMemory)
	setInt(&l.MaxScriptSize, scripting.DefaultMaxScript)
	setInt(&l.SharedDictSize, scripting.DefaultSharedDictSize)
	setDuration(&l.CGITimeout, cgi.DefaultTimeout)
	setInt(&l.MaxBody, cgi.DefaultMaxBody)
	setInt(&l.MaxFormPart, l.MaxBody)
	setInt(&l.MaxResponse, DefaultMaxResponse)
	setInt(&l.MaxRanges, DefaultMaxRanges)
	setInt(&l.OpenFileCacheMax, DefaultOpenFileCacheMax)
	setInt(&l.CGIProcesses, DefaultCGIProcesses)
	setInt(&l.CGIOpenFiles, DefaultCGIOpenFiles)
	setDuration(&l.CGICPU, l.CGITimeout.Std())
	setInt(&l.CGIMemory, DefaultCGIMemory)
	setDuration(&l.CGIGrace, DefaultCGIGrace)
}

// setDefaults fills the [php] keys (the pool's options) with phpfpm's
// defaults; checkPHP resolves tmp_dir against the file.
func (p *PHP) setDefaults() {
	if len(p.Extensions) == 0 {
		p.Extensions = []string{phpfpm.DefaultExtension}
	}
	setInt(&p.Workers, phpfpm.DefaultWorkers)
	setInt(&p.MaxRequests, phpfpm.DefaultMaxRequests)
	setDuration(&p.IdleTimeout, phpfpm.DefaultIdleTimeout)
	setDuration(&p.PoolIdle, phpfpm.DefaultPoolIdle)
	setDuration(&p.Timeout, phpfpm.DefaultTimeout)
	if p.TmpDir == "" {
		p.TmpDir = phpfpm.DefaultTmpDir
	}
	if p.FPM == "" {
		p.FPM = DefaultPHPFPM
	}
}

// Work names the kinds of work a vhost does and, for each, the identity it
// runs with.
type Work struct {
	Static, Hooks, CGI string // "uid N gid M", "server (...)" or "-" (none)
	// AsServer lists the kinds of tenant code (hooks, CGI) that run with
	// the server's identity.
	AsServer []string
}

// Identities returns who each kind of the vhost's work runs as, given the
// server's own identity as text (ServerIdentity).
func (v *VHost) Identities(server string) Work {
	tenant := fmt.Sprintf("uid %d gid %d", v.UID, v.GID)
	var w Work
	inProcess := tenant
	switch v.Mode {
	case "none", "suexec":
		inProcess = server
	case "uring":
		// In-process work runs on the server's threads; every file
		// operation it does is checked by the kernel as the tenant.
		inProcess = tenant + " (file operations, io_uring personality)"
	}
	w.Static = inProcess
	w.Hooks, w.CGI = "-", "-"
	if len(v.Hooks) > 0 {
		w.Hooks = inProcess
		if inProcess == server {
			w.AsServer = append(w.AsServer, "hooks")
		}
	}
	if v.CGI.Enabled {
		w.CGI = tenant
		if v.Mode == "none" {
			w.CGI = server
			w.AsServer = append(w.AsServer, "CGI")
		}
	}
	return w
}

// ServerIdentity describes the identity the server's own work will have:
// server.user when set, else the running process's effective uid, with
// "privileged" when that process could switch identities (root or
// CAP_SETUID; the server keeps CAP_SETUID after dropping to server.user
// whenever a vhost switches).
func (c *Config) ServerIdentity() string {
	uid := uint32(os.Geteuid())
	if c.HasServerUser {
		uid = c.ServerUID
	}
	if sandbox.Privileged() {
		return fmt.Sprintf("server (uid %d, privileged)", uid)
	}
	return fmt.Sprintf("server (uid %d)", uid)
}

// checkRunAsServer refuses a vhost whose hooks or CGI scripts would run with
// the identity of a privileged server unless it says run_as_server = true.
func (l *loader) checkRunAsServer(cfg *Config, file string, loc *locator, v *VHost) {
	if v.RunAsServer || !l.privileged {
		return
	}
	as := v.Identities("server").AsServer
	if len(as) == 0 {
		return
	}
	what := as[0]
	if len(as) == 2 {
		what = "hooks and CGI scripts"
	} else if what == "CGI" {
		what = "CGI scripts"
	}
	line := loc.line("", -1, "sandbox")
	if line == 0 {
		line = v.line
	}
	l.add(file, line, "sandbox %q runs this vhost's %s with the server's identity, and the server is privileged (root or CAP_SETUID): "+
		"use a switching sandbox (e.g. sandbox = \"thread\"), or set run_as_server = true to accept it", v.Mode, what)
}

// cgiLimits checks [limits] max_ranges, open_file_cache_max and the cgi_* keys (after
// setDefaults).
func (l *loader) cgiLimits(file string, loc *locator, lim *Limits) {
	for _, k := range []struct {
		key string
		v   int
		def int
	}{{"max_ranges", lim.MaxRanges, DefaultMaxRanges}, {"open_file_cache_max", lim.OpenFileCacheMax, DefaultOpenFileCacheMax}, {"cgi_processes", lim.CGIProcesses, DefaultCGIProcesses},
		{"cgi_open_files", lim.CGIOpenFiles, DefaultCGIOpenFiles}} {
		if k.v < -1 {
			l.add(file, loc.line("limits", -1, k.key), "%s must be positive, 0 (default %d) or -1 (unlimited)", k.key, k.def)
		}
	}
	if lim.CGIMemory < 16<<20 {
		l.add(file, loc.line("limits", -1, "cgi_memory"), "cgi_memory must be at least 16MiB (a shell needs a few MiB)")
	}
}

// CGIContainment returns the sandbox limits of the vhost's CGI processes.
func (l *Limits) CGIContainment() sandbox.Limits {
	pos := func(n int) int { return max(n, 0) } // -1: unlimited
	return sandbox.Limits{
		CPU:         l.CGICPU.Std(),
		Memory:      int64(l.CGIMemory),
		Processes:   pos(l.CGIProcesses),
		OpenFiles:   pos(l.CGIOpenFiles),
		OrphanGrace: l.CGIGrace.Std(),
		Background:  l.CGIBackground,
	}
}
