package tenant

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostd/hostd/sandbox"
)

// writeTree writes files (path -> content) under a new temp dir and makes
// the directories public/ and other/ so roots exist.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"public", "other", "hooks"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const mainOK = `[server]
listen_https = "127.0.0.1:8443"
listen_http = "127.0.0.1:8080"
vhosts = "vhosts.d/*.toml"
`

func TestLoadValid(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"hostd.toml": mainOK + "access_log = \"logs/access.log\"\n",
		"vhosts.d/alice.toml": `server_name = "Alice.Example"
aliases = ["www.alice.example"]
root = "../public"
user = "31001"
run_as_server = true
[limits]
script_timeout = "2s"
max_body = "2MiB"
[[hooks]]
phase = "access"
file = "../hooks/a.lua"
path = "/admin/*"
`,
		"vhosts.d/bob.toml": "server_name = \"bob.example\"\nroot = \"../other\"\n",
		"hooks/a.lua":       "return nil\n",
	})
	cfg, err := Load(filepath.Join(dir, "hostd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.VHosts) != 2 {
		t.Fatalf("got %d vhosts", len(cfg.VHosts))
	}
	a := cfg.Lookup("www.alice.example")
	if a == nil || a.ServerName != "alice.example" {
		t.Fatalf("lookup alias: %+v", a)
	}
	if a.Root != filepath.Join(dir, "public") || a.UID != 31001 || a.GID != 31001 {
		t.Errorf("root/uid/gid = %s %d %d", a.Root, a.UID, a.GID)
	}
	if cfg.Server.WriteTimeout.Std() != DefaultWriteTimeout || cfg.Server.MaxThreads != DefaultMaxThreads ||
		cfg.Server.TenantCPUShare != DefaultTenantCPUShare || a.Limits.MaxConcurrentPerClient != 32 {
		t.Errorf("capacity defaults: write_timeout %s max_threads %d tenant_cpu_share %g per client %d",
			cfg.Server.WriteTimeout.Std(), cfg.Server.MaxThreads, cfg.Server.TenantCPUShare, a.Limits.MaxConcurrentPerClient)
	}
	if a.Limits.ScriptTimeout.Std().Seconds() != 2 || a.Limits.MaxBody != 2<<20 || a.Limits.MaxWorkers != DefaultMaxWorkers() ||
		a.Limits.MaxScriptSize != 1<<20 || a.Limits.SharedDictSize != 16<<20 {
		t.Errorf("limits = %+v", a.Limits)
	}
	if got := a.Hooks[0]; got.File != filepath.Join(dir, "hooks/a.lua") || got.Line() != 9 || !got.Matches("/admin/x") || got.Matches("/x") {
		t.Errorf("hook = %+v line %d", got, got.Line())
	}
	if cfg.AccessLog != filepath.Join(dir, "logs/access.log") || cfg.StateDir != filepath.Join(dir, "state") {
		t.Errorf("paths: %s %s", cfg.AccessLog, cfg.StateDir)
	}
	// No default_sandbox: "auto" for a vhost with a user when hostd can
	// switch identities (root), "none" otherwise and for vhosts without.
	wantMode, wantAuto := "none", false
	if sandbox.CanSwitch() == nil {
		m, _ := sandbox.AutoMode()
		wantMode, wantAuto = string(m), true
	}
	if a.Mode != wantMode || a.AutoSandbox != wantAuto || cfg.Lookup("nobody.example") != nil {
		t.Errorf("mode %s (auto %v), want %s (auto %v)", a.Mode, a.AutoSandbox, wantMode, wantAuto)
	}
	if b := cfg.Lookup("bob.example"); b.Mode != "none" || b.AutoSandbox {
		t.Errorf("vhost without user: mode %s (auto %v), want none", b.Mode, b.AutoSandbox)
	}
}

func TestLoadSandboxKeys(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"hostd.toml": mainOK + "default_sandbox = \"auto\"\n",
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../public\"\nuser = \"31001\"\n" +
			"io_roots = [\"../other\", \"/tmp\"]\n",
		"vhosts.d/bob.toml": "server_name = \"bob.example\"\nroot = \"../other\"\nuser = \"31002\"\nsandbox = \"inline\"\n",
	})
	cfg, err := Load(filepath.Join(dir, "hostd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Lookup("alice.example"), cfg.Lookup("bob.example")
	auto, _ := sandbox.AutoMode()
	if a.Mode != string(auto) || !a.AutoSandbox {
		t.Errorf("alice: mode %s (auto %v), want %s chosen by auto", a.Mode, a.AutoSandbox, auto)
	}
	if b.Mode != "inline" || b.AutoSandbox {
		t.Errorf("bob: mode %s (auto %v), want inline", b.Mode, b.AutoSandbox)
	}
	if want := []string{filepath.Join(dir, "other"), "/tmp"}; !slices.Equal(a.IORoots, want) {
		t.Errorf("io_roots %v, want %v", a.IORoots, want)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		file  string // file the error names
		line  int
		want  string
	}{
		{"syntax error in vhost", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\n",
		}, "vhosts.d/a.toml", 2, "newlines"},
		{"unknown key with suggestion", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\n\nrooot = \"../public\"\n",
		}, "vhosts.d/a.toml", 3, `unknown key "rooot" (did you mean "root"?)`},
		{"unknown key in table", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n[limits]\nmax_wrkers = 3\n",
		}, "vhosts.d/a.toml", 4, `unknown key "limits.max_wrkers"`},
		{"max_script_size too large", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n[limits]\nmax_script_size = \"32MiB\"\n",
		}, "vhosts.d/a.toml", 4, "max_script_size must be between 1 byte and 16MiB"},
		{"negative shared_dict_size", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n[limits]\n\nshared_dict_size = -1\n",
		}, "vhosts.d/a.toml", 5, "shared_dict_size: size -1 must not be negative"},
		{"negative open_file_cache_max", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n[limits]\nopen_file_cache_valid = \"1s\"\nopen_file_cache_max = -2\n",
		}, "vhosts.d/a.toml", 5, "open_file_cache_max must be positive, 0 (default 1000) or -1 (unlimited)"},
		{"open_file_cache_valid not a duration", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n[limits]\nopen_file_cache_valid = 5\n",
		}, "vhosts.d/a.toml", 4, "want a duration string"},
		{"unknown key in main", map[string]string{
			"hostd.toml": mainOK + "acces_log = \"x\"\n",
		}, "hostd.toml", 5, `unknown key "server.acces_log" (did you mean "access_log"?)`},
		{"max_form_part above max_body", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n[limits]\nmax_body = \"1MiB\"\nmax_form_part = \"2MiB\"\n",
		}, "vhosts.d/a.toml", 5, "max_form_part (2097152 bytes) is larger than max_body (1048576 bytes)"},
		{"missing root", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../nope\"\n",
		}, "vhosts.d/a.toml", 2, "no such file or directory"},
		{"root is a file", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../hooks/x.lua\"\n", "hooks/x.lua": "",
		}, "vhosts.d/a.toml", 2, "is not a directory"},
		{"duplicate server name", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n",
			"vhosts.d/b.toml": "root = \"../public\"\nserver_name = \"a.example\"\n",
		}, "vhosts.d/b.toml", 2, "already claimed by"},
		{"alias duplicates a name", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n",
			"vhosts.d/b.toml": "server_name = \"b.example\"\naliases = [\"A.example\"]\nroot = \"../public\"\n",
		}, "vhosts.d/b.toml", 2, `"a.example" is already claimed by`},
		{"explicit auto needs a user", map[string]string{
			"hostd.toml":      mainOK + "default_sandbox = \"auto\"\n",
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n",
		}, "vhosts.d/a.toml", 1, `sandbox "auto" needs user`},
		{"unknown sandbox", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\nuser = \"31001\"\nsandbox = \"jail\"\n",
		}, "vhosts.d/a.toml", 4, `sandbox "jail": want one of none, suexec, uring, thread, thread-per-request, inline, auto`},
		{"missing io_roots", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\nio_roots = [\"../data\"]\n",
		}, "vhosts.d/a.toml", 3, "io_roots"},
		{"io_roots is a file", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\nio_roots = [\"../hooks/x.lua\"]\n", "hooks/x.lua": "",
		}, "vhosts.d/a.toml", 3, "is not a directory"},
		{"bad outbound entry", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n\noutbound = [\"api.example.com\", \"https://x.example\"]\n",
		}, "vhosts.d/a.toml", 4, `outbound "https://x.example": want a host name without scheme or port`},
		{"unreadable cert", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\ntls_cert = \"c.pem\"\ntls_key = \"c.key\"\n",
		}, "vhosts.d/a.toml", 3, "tls_cert"},
		{"garbage cert", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\ntls_cert = \"c.pem\"\ntls_key = \"c.key\"\n",
			"vhosts.d/c.pem":  "not a cert", "vhosts.d/c.key": "not a key",
		}, "vhosts.d/a.toml", 3, "failed to find any PEM data"},
		{"cert without key", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\ntls_cert = \"c.pem\"\n",
		}, "vhosts.d/a.toml", 3, "go together"},
		{"bad sandbox", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\nsandbox = \"threads\"\n",
		}, "vhosts.d/a.toml", 3, `sandbox "threads"`},
		{"sandbox without user", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\nsandbox = \"thread\"\n",
		}, "vhosts.d/a.toml", 1, "needs user"},
		{"sandbox as root", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\nsandbox = \"inline\"\nuser = \"0\"\n",
		}, "vhosts.d/a.toml", 4, "refuses uid/gid 0"},
		{"uid below min_uid", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\nsandbox = \"thread\"\nuser = \"999\"\n",
		}, "vhosts.d/a.toml", 4, "below server.min_uid 1000"},
		{"bad duration", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n[limits]\nscript_timeout = \"soon\"\n",
		}, "vhosts.d/a.toml", 4, "invalid duration"},
		{"hook phase", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n[[hooks]]\nphase = \"auth\"\nfile = \"../hooks/a.lua\"\n",
			"hooks/a.lua":     "",
		}, "vhosts.d/a.toml", 4, `hook phase "auth"`},
		{"hook file missing", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n[[hooks]]\nphase = \"access\"\nfile = \"../hooks/a.lua\"\n[[hooks]]\nphase = \"content\"\nfile = \"../hooks/b.lua\"\n",
			"hooks/a.lua":     "",
		}, "vhosts.d/a.toml", 8, "b.lua: no such file"},
		{"bad server name", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example:443\"\nroot = \"../public\"\n",
		}, "vhosts.d/a.toml", 1, "not a host name"},
		{"missing listen_https", map[string]string{
			"hostd.toml": "[server]\nlisten_http = \"127.0.0.1:1\"\n",
		}, "hostd.toml", 1, "listen_https is required"},
		{"unknown user", map[string]string{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\nuser = \"no-such-user-hostd\"\n",
		}, "vhosts.d/a.toml", 3, "no such user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"hostd.toml": mainOK}
			for k, v := range tc.files {
				files[k] = v
			}
			dir := writeTree(t, files)
			cfg, err := Load(filepath.Join(dir, "hostd.toml"))
			if err == nil {
				t.Fatalf("Load succeeded: %+v", cfg)
			}
			errs := Errors(err)
			if len(errs) == 0 {
				t.Fatalf("no located errors in %v", err)
			}
			for _, e := range errs {
				if e.File == filepath.Join(dir, tc.file) && e.Line == tc.line && strings.Contains(e.Msg, tc.want) {
					if !strings.HasPrefix(e.Error(), filepath.Join(dir, tc.file)+":") {
						t.Errorf("Error() = %q, want FILE:LINE: prefix", e.Error())
					}
					return
				}
			}
			t.Errorf("want %s:%d: ...%s..., got:\n%v", tc.file, tc.line, tc.want, err)
		})
	}
}

func TestSize(t *testing.T) {
	for in, want := range map[string]int64{"10": 10, "64KiB": 64 << 10, "1MiB": 1 << 20, "2MB": 2e6, "5 B": 5} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "1.5MiB", "-1", "1TiB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) succeeded", in)
		}
	}
}
