package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hostd/hostd/tenant"
)

// FirstUID is the uid of the first bench tenant; tenant i has FirstUID+i.
// Numeric uids need no passwd entry (their gid is the same number).
const FirstUID = 32001

// The hello hooks, the same as examples/hooks/{lua,ruby}/hello.*: they
// must produce exactly the native handler's response.
const (
	luaHello = `-- hello.lua: the bench's Lua hello (same as examples/hooks/lua/hello.lua).
r.headers_out["Content-Type"] = "text/plain"
r:write("Hello, world!\n")
`
	rubyHello = `# hello.rb: the bench's mruby hello (same as examples/hooks/ruby/hello.rb).
r.headers_out["Content-Type"] = "text/plain"
r.write("Hello, world!\n")
`
	// Content-Length keeps hostd from chunking the body, so the response
	// is the same size as the native one.
	shHello  = "#!/bin/sh\nprintf 'Content-Type: text/plain\\nContent-Length: 14\\n\\nHello, world!\\n'\n"
	phpInfo  = "<?php phpinfo(INFO_GENERAL);\n"
	phpHello = "<?php echo \"Hello, world!\\n\";\n"
)

// site is the throwaway setup: tenants, hooks and one configuration
// directory per sandbox mode, all under dir.
type site struct {
	dir     string
	tenants int
	root    bool   // running as root: tenants get their uids
	phpCGI  string // php-cgi path, "" when not installed
	phpFPM  bool   // php-fpm is installed and tenants have uids: [php] pools
	mruby   bool   // the mruby hook is configured
}

func (s *site) tenantName(i int) string { return "t" + strconv.Itoa(i+1) + ".bench" }

// cachedName is the twin vhost of tenant i: its root and uid, static files
// only, with the open-file cache on (the Cached handlers).
func (s *site) cachedName(i int) string { return "c" + strconv.Itoa(i+1) + ".bench" }

// hostName is the vhost h is requested on for tenant i.
func (s *site) hostName(h Handler, i int) string {
	if h.Cached {
		return s.cachedName(i)
	}
	return s.tenantName(i)
}

// OpenFileCacheValid is open_file_cache_valid of the Cached handlers'
// vhosts, and nginx's open_file_cache_valid in their peer cells.
const OpenFileCacheValid = time.Second

// writeTenants writes the document roots and hooks, owned by the tenants
// when running as root.
func (s *site) writeTenants() error {
	if err := os.Chmod(s.dir, 0o755); err != nil { // MkdirTemp makes 0700; tenants traverse it
		return err
	}
	files := map[string]string{
		"hooks/hello.lua": luaHello,
		"hooks/hello.rb":  rubyHello,
	}
	for name, body := range files {
		if err := writeFile(filepath.Join(s.dir, name), body, 0o644); err != nil {
			return err
		}
	}
	kib := strings.Repeat("0123456789abcdef", 64)
	for i := range s.tenants {
		pub := filepath.Join(s.dir, "tenants", s.tenantName(i), "public")
		tf := []struct {
			name, body string
			mode       os.FileMode
		}{
			{"1k.txt", kib, 0o644},
			{"cgi/hello.cgi", shHello, 0o755},
			// The same scripts for php-cgi (interpreter of .phpcgi) and
			// for the php-fpm pool (.php).
			{"cgi/hello.phpcgi", phpHello, 0o644},
			{"cgi/info.phpcgi", phpInfo, 0o644},
			{"php/hello.php", phpHello, 0o644},
			{"php/info.php", phpInfo, 0o644},
		}
		for _, f := range tf {
			if err := writeFile(filepath.Join(pub, f.name), f.body, f.mode); err != nil {
				return err
			}
		}
		if s.root {
			uid := FirstUID + i
			err := filepath.Walk(filepath.Join(s.dir, "tenants", s.tenantName(i)), func(p string, _ os.FileInfo, err error) error {
				if err != nil {
					return err
				}
				return os.Lchown(p, uid, uid)
			})
			if err != nil {
				return fmt.Errorf("chown tenant: %w", err)
			}
		}
	}
	return nil
}

func writeFile(p, body string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		return err
	}
	return os.Chmod(p, mode) // not subject to the umask
}

// writeConfig writes the configuration of one sandbox mode and returns
// its main file.
func (s *site) writeConfig(mode string) (string, error) {
	cdir := filepath.Join(s.dir, "conf", mode)
	// Overload protection off (-1): the bench measures what a mode can do,
	// and the new-connection transports would otherwise meet accept_rate
	// (1000 full handshakes/s per CPU) and max_handshakes (4 per CPU) first.
	// A hook's file is stat'ed at most once a second, not per run: the peers
	// (ngx_lua's lua_code_cache, h2o's mruby handler) never look at it again.
	main := tenant.MainFile{Server: tenant.Server{ListenHTTPS: "127.0.0.1:0", ListenHTTP: "127.0.0.1:0",
		StateDir: filepath.Join(s.dir, "state"), VHosts: "vhosts.d/*.toml", DefaultSandbox: "none",
		AcceptRate: -1, MaxHandshakes: -1,
		HookCheckInterval: tenant.Duration(time.Second)}}
	if err := tenant.WriteFile(filepath.Join(cdir, "hostd.toml"), main); err != nil {
		return "", err
	}
	for i := range s.tenants {
		v := tenant.VHost{ServerName: s.tenantName(i), Root: filepath.Join(s.dir, "tenants", s.tenantName(i), "public"),
			Sandbox: mode, AllowHTTP: true,
			// The baseline columns: hooks (and, in none, CGI) run as the server.
			RunAsServer: mode == "none" || mode == "suexec",
			CGI:         tenant.CGI{Enabled: true, Extensions: []string{".cgi"}},
			PHP:         tenant.PHP{Enabled: s.phpFPM},
			Hooks:       []tenant.Hook{{Phase: "content", File: filepath.Join(s.dir, "hooks/hello.lua"), Path: "/lua"}},
			Respond:     []tenant.Respond{{Path: "/native", Body: Hello, ContentType: "text/plain"}}}
		if s.root {
			v.User = strconv.Itoa(FirstUID + i)
		}
		if s.phpCGI != "" {
			v.CGI.Interpreters = map[string]string{".phpcgi": s.phpCGI}
		}
		if s.mruby {
			v.Hooks = append(v.Hooks, tenant.Hook{Phase: "content", File: filepath.Join(s.dir, "hooks/hello.rb"), Path: "/mruby"})
		}
		if err := tenant.WriteFile(filepath.Join(cdir, "vhosts.d", s.tenantName(i)+".toml"), &v); err != nil {
			return "", err
		}
		c := tenant.VHost{ServerName: s.cachedName(i), Root: v.Root, User: v.User, Sandbox: mode, AllowHTTP: true,
			Limits: tenant.Limits{OpenFileCacheValid: tenant.Duration(OpenFileCacheValid)}}
		if err := tenant.WriteFile(filepath.Join(cdir, "vhosts.d", s.cachedName(i)+".toml"), &c); err != nil {
			return "", err
		}
	}
	return filepath.Join(cdir, "hostd.toml"), nil
}
