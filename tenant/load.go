package tenant

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/scripting/engines"
	"github.com/hostd/hostd/scripting/outbound"
)

// switching reports whether mode runs tenant code with the tenant's identity
// in-process (or, for suexec, in CGI children).
func switching(mode string) bool { return mode != "none" }

// MainFile is the main file's tables, as Encode writes them.
type MainFile struct {
	Server   Server   `toml:"server"`
	Sessions Sessions `toml:"sessions,omitempty"`
}

// Load reads the main file at path and every vhost file its glob names,
// validates everything, and returns the configuration. On error it returns
// an ErrorList with every problem of every file, each naming its file and
// line.
func Load(path string) (*Config, error) {
	cfg, broken, err := LoadPartial(path)
	if err != nil {
		return nil, err
	}
	if len(broken) > 0 {
		var errs ErrorList
		for _, b := range broken {
			errs = append(errs, b.Errs...)
		}
		return nil, errs
	}
	return cfg, nil
}

// Broken is a vhost file that failed validation. LoadPartial leaves it out
// of the configuration; a reload keeps serving its previous version.
type Broken struct {
	// File is the vhost file (absolute).
	File string
	// Names are its server_name and aliases as far as they could be read;
	// none when the file does not parse.
	Names []string
	// Errs are its errors, each naming a file (the vhost file, or a hook
	// script it uses) and a line.
	Errs ErrorList
}

// LoadPartial is Load for one tenant at a time: it returns the
// configuration with the vhosts that are valid, and the vhost files that
// are not, each with its errors. An error in the main file (or a vhosts
// glob matching nothing) refuses everything: the error is then an
// ErrorList of every error of every file, main file first.
func LoadPartial(path string) (*Config, []*Broken, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", path, err)
	}
	l := &loader{privileged: sandbox.Privileged(), env: new(sandboxEnv)}
	cfg := l.loadMain(abs)
	if cfg == nil {
		return nil, nil, l.errs
	}
	files, err := filepath.Glob(cfg.VHostGlob)
	if err != nil {
		l.add(cfg.File, l.mainLoc.line("server", -1, "vhosts"), "invalid vhosts glob %q: %v", cfg.Server.VHosts, err)
		return nil, nil, l.errs
	}
	if len(files) == 0 {
		l.add(cfg.File, l.mainLoc.line("server", -1, "vhosts"), "vhosts %q matches no file (looked for %s)", cfg.Server.VHosts, cfg.VHostGlob)
	}
	slices.Sort(files)
	vs := make([]*VHost, len(files))
	errs := make([]ErrorList, len(files))
	for i, f := range files {
		vl := &loader{privileged: l.privileged, env: l.env}
		vs[i] = vl.loadVHost(cfg, f)
		errs[i] = vl.errs
	}
	checkDuplicates(vs, errs)
	checkNested(cfg, vs, errs) // policy.go
	var broken []*Broken
	for i, f := range files {
		if len(errs[i]) == 0 {
			cfg.VHosts = append(cfg.VHosts, vs[i])
			continue
		}
		b := &Broken{File: f, Errs: errs[i]}
		if vs[i] != nil && vs[i].ServerName != "" {
			b.Names = vs[i].Names()
		}
		broken = append(broken, b)
	}
	if len(l.errs) > 0 {
		all := l.errs
		for _, b := range broken {
			all = append(all, b.Errs...)
		}
		return nil, nil, all
	}
	return cfg, broken, nil
}

type loader struct {
	// privileged: the process could switch identities, so tenant code
	// running as the server would run with that power (checkRunAsServer).
	privileged bool
	env        *sandboxEnv // shared by the main file's and the vhost files' loaders
	errs       ErrorList
	mainLoc    *locator
	locs       map[string]*locator
}

func (l *loader) add(file string, line int, format string, args ...any) {
	l.errs = append(l.errs, &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// suggest names the key of v's type closest to a misspelt one.
func suggest(key string, v any) string {
	best, bestD := "", 3
	for _, k := range tomlKeys(reflect.TypeOf(v), nil) {
		if d := editDistance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// tomlKeys appends the toml tags of t's fields, and of the structs they
// hold, to keys: every key a file decoded into t may use.
func tomlKeys(t reflect.Type, keys []string) []string {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return tomlKeys(t.Elem(), keys)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("toml"), ","); name != "" && name != "-" {
				keys = append(keys, name)
				keys = tomlKeys(f.Type, keys)
			}
		}
	}
	return keys
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func rel(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func (l *loader) loadMain(file string) *Config {
	var m MainFile
	d := l.decode(file, &m)
	if d == nil {
		return nil
	}
	loc := d.loc
	l.mainLoc = loc
	s := &m.Server
	s.setDefaults()
	line := func(key string) int { return loc.line("server", -1, key) }
	if s.ListenHTTPS == "" && !d.bad["server.listen_https"] {
		l.add(file, loc.line("server", -1, ""), "server.listen_https is required (e.g. listen_https = \"127.0.0.1:8443\")")
	}
	l.checkListeners(file, loc, s)
	l.checkTLSProfile(file, loc.line("server", -1, "tls_profile"), s.TLSProfile)
	if s.ACMECARoot != "" && !filepath.IsAbs(s.ACMECARoot) {
		s.ACMECARoot = filepath.Join(filepath.Dir(file), s.ACMECARoot)
	}
	if s.LogFormat != "" && s.LogFormat != "combined" && s.LogFormat != "json" {
		l.add(file, line("log_format"), "log_format %q: want \"combined\" or \"json\"", s.LogFormat)
	}
	implicitSandbox := s.DefaultSandbox == ""
	if implicitSandbox {
		s.DefaultSandbox = defaultSandbox()
	}
	if !slices.Contains(Modes(), s.DefaultSandbox) {
		l.add(file, line("default_sandbox"), "default_sandbox %q: want one of %s", s.DefaultSandbox, strings.Join(Modes(), ", "))
	} else if _, msg := l.env.resolveMode(s.DefaultSandbox, "default_sandbox"); msg != "" {
		l.add(file, line("default_sandbox"), "%s", msg)
	}
	for _, k := range []struct {
		key string
		v   int
	}{{"max_handshakes", s.MaxHandshakes}, {"accept_rate", s.AcceptRate}, {"max_conns_per_ip", s.MaxConnsPerIP}} {
		if k.v < -1 {
			l.add(file, line(k.key), "%s must be positive, 0 (default) or -1 (unlimited)", k.key)
		}
	}
	if s.TicketRotation.Std() < time.Second {
		l.add(file, line("ticket_rotation"), "ticket_rotation must be at least 1s (e.g. \"24h\")")
	}
	if s.MinUID != nil && *s.MinUID < 1 {
		l.add(file, line("min_uid"), "min_uid must be at least 1")
	}
	dir := filepath.Dir(file)
	cfg := &Config{File: file, Server: *s, Dir: dir, StateDir: rel(dir, s.StateDir), VHostGlob: rel(dir, s.VHosts), mainLoc: loc,
		implicitSandbox: implicitSandbox}
	if s.AccessLog != "" && s.AccessLog != "-" {
		cfg.AccessLog = rel(dir, s.AccessLog)
	} else {
		cfg.AccessLog = s.AccessLog
	}
	if s.User != "" {
		uid, gid, err := resolveIdentity(s.User, s.Group)
		if err != nil {
			l.add(file, line("user"), "server.user: %v", err)
		} else {
			cfg.ServerUID, cfg.ServerGID, cfg.HasServerUser = uid, gid, true
		}
	}
	l.checkLogPath(cfg, file, line("access_log"), "access_log", cfg.AccessLog)
	l.checkPolicy(file, loc, cfg) // policy.go
	l.checkServerExtras(file, loc, cfg)
	l.checkSessions(file, loc, &m.Sessions)
	if m.Sessions.PasswordFile = rel(dir, m.Sessions.PasswordFile); m.Sessions.PasswordFile != "" {
		// It may not exist yet (make demo-services writes the demo's);
		// serving without it fails with the file's name.
		if fi, err := os.Stat(m.Sessions.PasswordFile); err == nil && !fi.Mode().IsRegular() {
			l.add(file, loc.line("sessions", -1, "password_file"), "sessions.password_file %s is not a regular file", m.Sessions.PasswordFile)
		}
	}
	cfg.Sessions = m.Sessions
	l.effectiveSessions(cfg, file, &Sessions{})
	return cfg
}

// loadVHost loads one vhost file. It returns nil when the file could not
// be parsed, else the vhost as far as it could be read; it is valid only
// when l has no errors.
func (l *loader) loadVHost(cfg *Config, file string) *VHost {
	v := &VHost{}
	d := l.decode(file, v)
	if d == nil {
		return nil
	}
	loc := d.loc
	v.setDefaults()
	n := len(l.errs)
	dir := filepath.Dir(file)
	v.File = file
	line := func(key string) int { return loc.line("", -1, key) }
	v.line = line("server_name")
	v.aliasLine = line("aliases")
	v.ServerName = strings.ToLower(strings.TrimSpace(v.ServerName))
	if v.ServerName == "" && d.bad["server_name"] {
		// reported by decode
	} else if v.ServerName == "" {
		l.add(file, 1, "server_name is required (e.g. server_name = \"alice.example\")")
	} else if err := checkHostname(v.ServerName); err != nil {
		l.add(file, v.line, "server_name %q: %v", v.ServerName, err)
	}
	for i, a := range v.Aliases {
		v.Aliases[i] = strings.ToLower(strings.TrimSpace(a))
		if err := checkHostname(v.Aliases[i]); err != nil {
			l.add(file, line("aliases"), "alias %q: %v", a, err)
		}
	}

	if v.Root == "" && d.bad["root"] {
		// reported by decode
	} else if v.Root == "" {
		l.add(file, 1, "root is required (the document root, e.g. root = \"../tenants/alice/public\")")
	} else {
		v.Root = rel(dir, v.Root)
		if fi, err := os.Stat(v.Root); err != nil {
			l.add(file, line("root"), "root %s: %v", v.Root, unwrapPath(err))
		} else if !fi.IsDir() {
			l.add(file, line("root"), "root %s is not a directory", v.Root)
		}
	}

	if v.TLS != "" && v.TLS != "acme" {
		l.add(file, line("tls"), "tls %q: want \"acme\" (or leave it out)", v.TLS)
	} else if v.TLS == "acme" && v.TLSCert != "" {
		l.add(file, line("tls"), "tls = \"acme\" obtains the certificate: remove tls_cert and tls_key")
	}
	if (v.TLSCert == "") != (v.TLSKey == "") {
		l.add(file, max(line("tls_cert"), line("tls_key")), "tls_cert and tls_key go together: set both, or neither for a generated certificate")
	} else if v.TLSCert != "" {
		v.TLSCert, v.TLSKey = rel(dir, v.TLSCert), rel(dir, v.TLSKey)
		if _, err := tls.LoadX509KeyPair(v.TLSCert, v.TLSKey); err != nil {
			l.add(file, line("tls_cert"), "tls_cert %s / tls_key %s: %v", v.TLSCert, v.TLSKey, unwrapPath(err))
		}
	}

	for _, ix := range v.Index {
		if ix == "" || strings.ContainsAny(ix, `/\`) || ix == "." || ix == ".." {
			l.add(file, line("index"), "index %q must be a plain file name", ix)
		}
	}

	v.Mode = v.Sandbox
	switch {
	case v.Mode == "" && cfg.implicitSandbox && v.User == "":
		v.Mode = "none" // the implicit "auto" isolates only vhosts that name a user
	case v.Mode == "":
		v.Mode = cfg.Server.DefaultSandbox
	case !slices.Contains(Modes(), v.Mode):
		l.add(file, line("sandbox"), "sandbox %q: want one of %s", v.Mode, strings.Join(Modes(), ", "))
	}
	v.AutoSandbox = v.Mode == "auto"
	mode, msg := l.env.resolveMode(v.Mode, "sandbox")
	if msg != "" && v.Sandbox != "" { // a default_sandbox error is reported once, on the main file
		l.add(file, line("sandbox"), "%s", msg)
	}
	named := v.Mode // as configured, for messages
	v.Mode = mode
	if v.User != "" {
		uid, gid, err := resolveIdentity(v.User, v.Group)
		if err != nil {
			l.add(file, line("user"), "%v", err)
		}
		v.UID, v.GID = uid, gid
	} else if v.Group != "" {
		l.add(file, line("group"), "group needs user")
	}
	if switching(v.Mode) && len(l.errs) == n {
		switch {
		case v.User == "":
			l.add(file, v.line, "sandbox %q needs user (the tenant's user name or uid)", named)
		case v.UID == 0 || v.GID == 0:
			l.add(file, line("user"), "sandbox %q refuses uid/gid 0: a tenant must not run as root", named)
		case int64(v.UID) < cfg.MinUID():
			l.add(file, line("user"), "uid %d is below server.min_uid %d", v.UID, cfg.MinUID())
		}
	}
	for i, r := range v.IORoots {
		v.IORoots[i] = rel(dir, r)
		if fi, err := os.Stat(v.IORoots[i]); err != nil {
			l.add(file, line("io_roots"), "io_roots %s: %v", v.IORoots[i], unwrapPath(err))
		} else if !fi.IsDir() {
			l.add(file, line("io_roots"), "io_roots %s is not a directory", v.IORoots[i])
		}
	}
	for _, e := range v.Outbound {
		if err := outbound.CheckEntry(e); err != nil {
			l.add(file, line("outbound"), "outbound %q: %v", e, err)
		}
	}
	l.checkRunAsServer(cfg, file, loc, v)
	if v.ErrorLog != "" {
		v.ErrorLog = rel(dir, v.ErrorLog)
	}
	if v.AccessLog != "" && v.AccessLog != "-" {
		v.AccessLog = rel(dir, v.AccessLog)
	}
	l.checkLogPath(cfg, file, line("error_log"), "error_log", v.ErrorLog)
	l.checkLogPath(cfg, file, line("access_log"), "access_log", v.AccessLog)

	lim := &v.Limits
	if lim.MaxWorkers < 0 {
		l.add(file, loc.line("limits", -1, "max_workers"), "max_workers must not be negative")
	}
	if lim.MaxConcurrent < -1 {
		l.add(file, loc.line("limits", -1, "max_concurrent"), "max_concurrent must be positive, 0 (default %d) or -1 (unlimited)", DefaultMaxConcurrent)
	}
	if lim.MaxConcurrentPerClient < -1 {
		l.add(file, loc.line("limits", -1, "max_concurrent_per_client"), "max_concurrent_per_client must be positive, 0 (default max_concurrent/8) or -1 (unlimited)")
	}
	if lim.MaxScriptSize > maxScriptSize {
		l.add(file, loc.line("limits", -1, "max_script_size"), "max_script_size must be between 1 byte and 16MiB (default 1MiB)")
	}
	if lim.MaxFormPart > lim.MaxBody {
		l.add(file, loc.line("limits", -1, "max_form_part"), "max_form_part (%d bytes) is larger than max_body (%d bytes): a part cannot be larger than the body; raise max_body or lower max_form_part", lim.MaxFormPart, lim.MaxBody)
	}
	l.cgiLimits(file, loc, lim)

	for _, e := range v.CGI.Extensions {
		if !strings.HasPrefix(e, ".") || len(e) < 2 {
			l.add(file, loc.line("cgi", -1, "extensions"), "cgi extension %q must start with '.'", e)
		}
	}
	for ext, prog := range v.CGI.Interpreters {
		if !strings.HasPrefix(ext, ".") {
			l.add(file, loc.line("cgi", -1, "interpreters"), "cgi interpreter extension %q must start with '.'", ext)
		}
		if !filepath.IsAbs(prog) {
			l.add(file, loc.line("cgi", -1, "interpreters"), "cgi interpreter %q must be an absolute path", prog)
		} else if v.CGI.Enabled {
			if fi, err := os.Stat(prog); err != nil {
				l.add(file, loc.line("cgi", -1, "interpreters"), "cgi interpreter %s: %v", prog, unwrapPath(err))
			} else if fi.Mode()&0o111 == 0 {
				l.add(file, loc.line("cgi", -1, "interpreters"), "cgi interpreter %s is not executable", prog)
			}
		}
	}

	l.checkPHP(cfg, file, loc, v) // php.go

	for i := range v.Hooks {
		h := &v.Hooks[i]
		h.line = loc.line("hooks", i, "")
		if _, err := parsePhase(h.Phase); err != nil {
			l.add(file, nonzero(loc.line("hooks", i, "phase"), h.line), "%v", err)
		}
		if h.File == "" {
			l.add(file, h.line, "hook needs file (e.g. file = \"hooks/auth.lua\")")
			continue
		}
		h.File = rel(dir, h.File)
		langs := engines.Builtin()
		if _, ok := langs.Lookup(filepath.Ext(h.File)); !ok {
			l.add(file, nonzero(loc.line("hooks", i, "file"), h.line), "hook %s: want %s", h.File, langs.Want())
			continue
		}
		if fi, err := os.Stat(h.File); err != nil {
			l.add(file, nonzero(loc.line("hooks", i, "file"), h.line), "hook %s: %v", h.File, unwrapPath(err))
		} else if !fi.Mode().IsRegular() {
			l.add(file, nonzero(loc.line("hooks", i, "file"), h.line), "hook %s is not a regular file", h.File)
		}
		if err := checkPathPattern(h.Path); err != nil {
			l.add(file, nonzero(loc.line("hooks", i, "path"), h.line), "hook path %q: %v", h.Path, err)
		}
	}
	for i := range v.Respond {
		rs := &v.Respond[i]
		if rs.Path == "" {
			l.add(file, loc.line("respond", i, ""), "respond needs path (e.g. path = \"/healthz\")")
		} else if err := checkPathPattern(rs.Path); err != nil {
			l.add(file, nonzero(loc.line("respond", i, "path"), loc.line("respond", i, "")), "respond path %q: %v", rs.Path, err)
		}
		if rs.Status == 0 {
			rs.Status = 200
		}
		if rs.Status < 200 || rs.Status > 999 {
			l.add(file, nonzero(loc.line("respond", i, "status"), loc.line("respond", i, "")), "respond status %d: want 200 to 999", rs.Status)
		}
		if rs.ContentType == "" {
			rs.ContentType = "text/plain; charset=utf-8"
		}
	}
	l.checkSessions(file, loc, &v.Sessions)
	if v.Sessions.PasswordFile != "" {
		l.add(file, loc.line("sessions", -1, "password_file"), "sessions.password_file is set in the main file only (a vhost file must not name files root reads)")
	}
	v.Sessions = l.effectiveSessions(cfg, file, &v.Sessions)
	l.checkTLSProfile(file, line("tls_profile"), v.TLSProfile)
	if v.TLSProfile == "" {
		v.TLSProfile = cfg.Server.TLSProfile
	}
	l.checkHSTS(file, line("hsts"), &v.HSTS)
	l.checkVHostPolicy(cfg, file, loc, v) // policy.go
	return v
}

func nonzero(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

func parsePhase(s string) (int, error) {
	for i, p := range []string{"rewrite", "access", "content", "log"} {
		if s == p {
			return i, nil
		}
	}
	return 0, fmt.Errorf("hook phase %q: want rewrite, access, content or log", s)
}

// checkDuplicates reports a name claimed by two vhost files on both: a
// name belongs to one vhost, and neither file takes it from the other
// (a reload keeps the name with the vhost that served it). vs[i] is nil
// for a file that did not parse; errs[i] receives file i's errors.
func checkDuplicates(vs []*VHost, errs []ErrorList) {
	type claim struct {
		i    int
		line int
	}
	seen := map[string]claim{}
	for i, v := range vs {
		if v == nil || v.ServerName == "" {
			continue
		}
		for j, n := range v.Names() {
			line := v.line
			if j > 0 && v.aliasLine > 0 {
				line = v.aliasLine
			}
			prev, ok := seen[n]
			if !ok {
				seen[n] = claim{i, line}
				continue
			}
			if prev.i == i {
				errs[i] = append(errs[i], &Error{File: v.File, Line: line, Msg: fmt.Sprintf("name %q is listed twice", n)})
				continue
			}
			p := vs[prev.i]
			errs[i] = append(errs[i], &Error{File: v.File, Line: line,
				Msg: fmt.Sprintf("server name %q is already claimed by %s:%d (a name belongs to one vhost file)", n, p.File, prev.line)})
			errs[prev.i] = append(errs[prev.i], &Error{File: p.File, Line: prev.line,
				Msg: fmt.Sprintf("server name %q is also claimed by %s:%d (a name belongs to one vhost file)", n, v.File, line)})
		}
	}
}

// checkHostname accepts DNS names (letters, digits, '-', '.') and a leading
// "*." wildcard label.
func checkHostname(h string) error {
	name := strings.TrimPrefix(h, "*.")
	if name == "" || len(name) > 253 {
		return errors.New("not a host name")
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return errors.New("not a host name (want e.g. alice.example, without port)")
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("not a host name: invalid character %q", c)
			}
		}
	}
	return nil
}

// resolveIdentity resolves a user name or numeric uid and an optional
// group name or gid. A numeric uid without a passwd entry gets the gid of
// the same number unless group says otherwise.
func resolveIdentity(userName, groupName string) (uid, gid uint32, err error) {
	if n, perr := strconv.ParseUint(userName, 10, 32); perr == nil {
		uid, gid = uint32(n), uint32(n)
		if u, lerr := user.LookupId(userName); lerr == nil {
			g, _ := strconv.ParseUint(u.Gid, 10, 32)
			gid = uint32(g)
		}
	} else {
		u, lerr := user.Lookup(userName)
		if lerr != nil {
			return 0, 0, fmt.Errorf("user %q: no such user (use a numeric uid, or create the user)", userName)
		}
		a, _ := strconv.ParseUint(u.Uid, 10, 32)
		b, _ := strconv.ParseUint(u.Gid, 10, 32)
		uid, gid = uint32(a), uint32(b)
	}
	if groupName == "" {
		return uid, gid, nil
	}
	if n, perr := strconv.ParseUint(groupName, 10, 32); perr == nil {
		return uid, uint32(n), nil
	}
	g, lerr := user.LookupGroup(groupName)
	if lerr != nil {
		return 0, 0, fmt.Errorf("group %q: no such group (use a numeric gid, or create the group)", groupName)
	}
	n, _ := strconv.ParseUint(g.Gid, 10, 32)
	return uid, uint32(n), nil
}
