package tenant

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// The tenant policy: the [server] keys that bound what a vhost file may
// claim, for hosts where tenants can edit their own vhost file (a
// control panel, an .htaccess-style setup). Each refusal names the
// vhost file and the line of the key.

// DefaultForbiddenGroups are the groups no vhost may run as unless
// server.forbidden_groups says otherwise: they give access to disks,
// password hashes, logs, terminals or root.
var DefaultForbiddenGroups = []string{"root", "shadow", "disk", "adm", "sudo", "kmem", "tty", "docker", "lxd", "wheel", "systemd-journal"}

// policy is the resolved [server] tenant policy of a Config.
type policy struct {
	trustFiles bool
	trusted    []uint32 // owners a configuration file may have
	roots      []string // real paths; empty = anywhere
	logDirs    []string // real paths; empty = anywhere
	minGID     int64
	forbidden  map[uint32]string // gid -> name as configured
	modes      []string
	sessStore  bool
	nested     bool
	owned      bool
}

// checkPolicy validates the [server] policy keys and resolves them into
// cfg.policy. dir is the main file's directory.
func (l *loader) checkPolicy(file string, loc *locator, cfg *Config) {
	s := &cfg.Server
	line := func(key string) int { return loc.line("server", -1, key) }
	p := &policy{trustFiles: s.VHostFilesTrusted == nil || *s.VHostFilesTrusted,
		sessStore: s.VHostSessionStore == nil || *s.VHostSessionStore, nested: s.NestedNames,
		owned: s.RequireTenantOwned}
	p.trusted = []uint32{0, uint32(os.Geteuid())}
	if fi, err := os.Stat(file); err == nil {
		// The main file's owner controls the configuration already.
		p.trusted = append(p.trusted, fi.Sys().(*syscall.Stat_t).Uid)
	}
	if p.trustFiles {
		l.checkTrusted(file, file, filepath.Dir(file), p.trusted)
	}
	for _, k := range []struct {
		key  string
		in   []string
		into *[]string
	}{{"tenant_roots", s.TenantRoots, &p.roots}, {"allowed_log_dirs", s.AllowedLogDirs, &p.logDirs}} {
		for _, d := range k.in {
			if !filepath.IsAbs(d) {
				l.add(file, line(k.key), "%s: %q must be an absolute path", k.key, d)
				continue
			}
			real, err := filepath.EvalSymlinks(d)
			if err != nil {
				l.add(file, line(k.key), "%s: %v", k.key, unwrapPath(err))
				continue
			}
			*k.into = append(*k.into, real)
		}
	}
	p.minGID = cfg.MinUID()
	if s.MinGID != nil {
		if *s.MinGID < 1 {
			l.add(file, line("min_gid"), "min_gid must be at least 1")
		}
		p.minGID = *s.MinGID
	}
	groups, explicit := s.ForbiddenGroups, s.ForbiddenGroups != nil
	if !explicit {
		groups = DefaultForbiddenGroups
	}
	p.forbidden = map[uint32]string{0: "root"}
	for _, g := range groups {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			p.forbidden[uint32(n)] = g
			continue
		}
		gr, err := user.LookupGroup(g)
		if err != nil {
			if explicit {
				l.add(file, line("forbidden_groups"), "forbidden_groups: group %q: no such group (use a numeric gid)", g)
			}
			continue
		}
		n, _ := strconv.ParseUint(gr.Gid, 10, 32)
		p.forbidden[uint32(n)] = g
	}
	p.modes = Modes()
	if s.AllowedSandboxes != nil {
		p.modes = s.AllowedSandboxes
		for _, m := range p.modes {
			if !slices.Contains(Modes(), m) {
				l.add(file, line("allowed_sandboxes"), "allowed_sandboxes: %q: want modes from %s", m, strings.Join(Modes(), ", "))
			}
		}
		if !slices.Contains(p.modes, s.DefaultSandbox) {
			l.add(file, line("allowed_sandboxes"), "allowed_sandboxes does not include default_sandbox %q", s.DefaultSandbox)
		}
	}
	cfg.policy = p
}

// checkTrusted reports file (named in errors as at) unless it and the
// directories above it, up to and including top or the first directory
// that holds top, are owned by a trusted user and writable by no one
// else: like sshd's StrictModes, which checks up to the home directory.
// A directory writable by all with the sticky bit is accepted above the
// file's own directory: others can add entries there but not replace
// the trusted ones.
func (l *loader) checkTrusted(file, at, top string, trusted []uint32) {
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		return // reported when the file is read
	}
	if t, err := filepath.EvalSymlinks(top); err == nil {
		top = t
	}
	fix := "(chown root and chmod go-w it, or set server.vhost_files_trusted = false)"
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			l.add(at, 1, "%s: %v", p, unwrapPath(err))
			return
		}
		st := fi.Sys().(*syscall.Stat_t)
		what := "directory"
		if p == real {
			what = "file"
		}
		switch {
		case !slices.Contains(trusted, st.Uid):
			l.add(at, 1, "%s %s is owned by uid %d, not by root or the server's user: a configuration file a tenant can change is refused %s", what, p, st.Uid, fix)
			return
		case fi.Mode().Perm()&0o022 != 0 && !(fi.IsDir() && fi.Mode()&os.ModeSticky != 0 && p != filepath.Dir(real)):
			l.add(at, 1, "%s %s is writable by group or others (mode %04o): a configuration file a tenant can change is refused %s", what, p, fi.Mode().Perm(), fix)
			return
		}
		if p == filepath.Dir(p) || p == top || strings.HasPrefix(top, p+string(filepath.Separator)) {
			return
		}
	}
}

// within reports whether the real path of p lies in one of dirs (all
// real paths); p need not exist beyond its directory.
func within(p string, dirs []string) bool {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		d, derr := filepath.EvalSymlinks(filepath.Dir(p))
		if derr != nil {
			return false
		}
		real = filepath.Join(d, filepath.Base(p))
	}
	for _, d := range dirs {
		if real == d || strings.HasPrefix(real, d+string(filepath.Separator)) || d == "/" {
			return true
		}
	}
	return false
}

// checkVHostPolicy applies the tenant policy to a loaded vhost. It runs
// after the vhost's own checks.
func (l *loader) checkVHostPolicy(cfg *Config, file string, loc *locator, v *VHost) {
	p := cfg.policy
	if p == nil {
		return
	}
	line := func(key string) int { return nonzero(loc.line("", -1, key), 1) }
	if p.trustFiles {
		l.checkTrusted(file, file, cfg.Dir, p.trusted)
	}
	if len(p.roots) > 0 && v.Root != "" && !within(v.Root, p.roots) {
		l.add(file, line("root"), "root %s is outside server.tenant_roots (%s)", v.Root, strings.Join(p.roots, ", "))
	}
	if len(p.logDirs) > 0 {
		for _, k := range []struct{ key, path string }{{"error_log", v.ErrorLog}, {"access_log", v.AccessLog}} {
			if k.path != "" && k.path != "-" && !within(k.path, p.logDirs) {
				l.add(file, line(k.key), "%s %s is outside server.allowed_log_dirs (%s)", k.key, k.path, strings.Join(p.logDirs, ", "))
			}
		}
	}
	if v.User != "" {
		at := line("user")
		if loc.line("", -1, "group") != 0 {
			at = line("group")
		}
		for _, g := range append([]uint32{v.GID}, v.Groups...) {
			if name, bad := p.forbidden[g]; bad {
				l.add(file, at, "gid %d (%s) is in server.forbidden_groups: a tenant must not run with it", g, name)
			} else if int64(g) < p.minGID {
				l.add(file, at, "gid %d is below server.min_gid %d", g, p.minGID)
			}
		}
	}
	if v.Sandbox != "" && !slices.Contains(p.modes, v.Sandbox) && slices.Contains(Modes(), v.Sandbox) {
		l.add(file, line("sandbox"), "sandbox %q is not in server.allowed_sandboxes (%s)", v.Sandbox, strings.Join(p.modes, ", "))
	}
	if !p.sessStore {
		header := loc.line("sessions", -1, "")
		for _, k := range []string{"store", "url", "servers", "backup"} {
			if n := loc.line("sessions", -1, k); n != 0 && n != header {
				l.add(file, n, "sessions.%s: server.vhost_session_store = false: the session store is the main file's", k)
			}
		}
	}
	if v.TLSKey != "" {
		l.checkKeyOwner(file, line("tls_key"), v, p.trusted)
	}
	if p.owned && v.User != "" {
		l.checkOwned(file, line("root"), "root", v.Root, v.UID)
		for i, h := range v.Hooks {
			l.checkOwned(file, nonzero(loc.line("hooks", i, "file"), h.line), "hook", h.File, v.UID)
		}
	}
}

// checkKeyOwner refuses a tls_key owned by anyone but root (the server)
// or the vhost's own user: a vhost cannot name another tenant's key.
func (l *loader) checkKeyOwner(file string, at int, v *VHost, trusted []uint32) {
	fi, err := os.Stat(v.TLSKey)
	if err != nil {
		return // reported by the key pair check
	}
	uid := fi.Sys().(*syscall.Stat_t).Uid
	if !slices.Contains(trusted[:2], uid) && !(v.User != "" && uid == v.UID) {
		l.add(file, at, "tls_key %s is owned by uid %d: it must belong to root or to the vhost's user", v.TLSKey, uid)
	}
}

// checkOwned refuses path unless uid owns it (require_tenant_owned).
func (l *loader) checkOwned(file string, at int, what, path string, uid uint32) {
	fi, err := os.Stat(path)
	if err != nil {
		return // reported by the vhost's own checks
	}
	if owner := fi.Sys().(*syscall.Stat_t).Uid; owner != uid {
		l.add(file, at, "%s %s is owned by uid %d, not by the vhost's user %d (server.require_tenant_owned)", what, path, owner, uid)
	}
}

// checkNested reports, unless server.nested_names is set, a name of one
// vhost that lies under another user's name (www.dave.example,
// *.dave.example next to dave.example) or a wildcard that covers another
// user's name (*.example next to dave.example). The error goes to the
// vhost that claims into the other's names.
func checkNested(cfg *Config, vs []*VHost, errs []ErrorList) {
	if cfg.policy != nil && cfg.policy.nested {
		return
	}
	owner := func(v *VHost) uint32 {
		if v.User == "" {
			return 0
		}
		return v.UID
	}
	for i, a := range vs {
		if a == nil || a.ServerName == "" {
			continue
		}
		for j, b := range vs {
			if j == i || b == nil || b.ServerName == "" || owner(a) == owner(b) {
				continue
			}
			for ai, n := range a.Names() {
				for _, m := range b.Names() {
					if !claimsInto(n, m) {
						continue
					}
					at := a.line
					if ai > 0 && a.aliasLine > 0 {
						at = a.aliasLine
					}
					errs[i] = append(errs[i], &Error{File: a.File, Line: at, Msg: fmt.Sprintf(
						"name %q reaches into %q of %s (another user's vhost): set server.nested_names = true if that is intended", n, m, b.File)})
				}
			}
		}
	}
}

// claimsInto reports whether name n lies under name m, or is a wildcard
// that covers or lies above m.
func claimsInto(n, m string) bool {
	mBase := strings.TrimPrefix(m, "*.")
	if base, ok := strings.CutPrefix(n, "*."); ok {
		// *.base covers m, or lies in m's domain.
		return mBase == base || strings.HasSuffix(mBase, "."+base) || strings.HasSuffix(base, "."+mBase)
	}
	return strings.HasSuffix(n, "."+mBase) && !strings.HasPrefix(m, "*.")
}
