package tenant

import (
	"fmt"
	"os"
	"time"

	"github.com/hostd/hostd/sandbox"
)

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
	if v.Mode == "none" || v.Mode == "suexec" {
		inProcess = server
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

// Defaults of the CGI containment and range keys of [limits].
const (
	DefaultCGIMemory    = 512 << 20
	DefaultCGIProcesses = 512
	DefaultCGIOpenFiles = 1024
	DefaultCGIGrace     = 2 * time.Second
	DefaultMaxRanges    = 16
)

// cgiLimits checks and defaults [limits] max_ranges and the cgi_* keys;
// lim.CGITimeout must already have its default.
func (l *loader) cgiLimits(file string, loc *locator, lim *Limits) {
	for _, k := range []struct {
		key string
		v   *int
		def int
	}{{"max_ranges", &lim.MaxRanges, DefaultMaxRanges}, {"cgi_processes", &lim.CGIProcesses, DefaultCGIProcesses},
		{"cgi_open_files", &lim.CGIOpenFiles, DefaultCGIOpenFiles}} {
		switch {
		case *k.v < -1:
			l.add(file, loc.line("limits", -1, k.key), "%s must be positive, 0 (default %d) or -1 (unlimited)", k.key, k.def)
		case *k.v == 0:
			*k.v = k.def
		}
	}
	if lim.CGICPU == 0 {
		lim.CGICPU = lim.CGITimeout
	}
	if lim.CGIMemory == 0 {
		lim.CGIMemory = DefaultCGIMemory
	} else if lim.CGIMemory < 16<<20 {
		l.add(file, loc.line("limits", -1, "cgi_memory"), "cgi_memory must be at least 16MiB (a shell needs a few MiB)")
	}
	if lim.CGIGrace == 0 {
		lim.CGIGrace = Duration(DefaultCGIGrace)
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
	}
}
