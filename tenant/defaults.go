package tenant

import (
	"fmt"
	"os"

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
