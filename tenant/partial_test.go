package tenant

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLoadReportsEverything: one run lists every error of every file with
// FILE:LINE[:COL], a type error does not hide the rest of its file, and an
// error in the main file does not hide the vhosts' errors.
func TestLoadReportsEverything(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"hostd.toml": `[server]
listen_https = ":443x"
listen_http = "127.0.0.1:99999"
admin_listen = "example.org:9443"
vhosts = "vhosts.d/*.toml"
read_timeout = 60
`,
		"vhosts.d/a.toml": `server_name = "a.example"
root = "../public"
run_as_server = true
[limits]
max_workers = "3"
max_body = "lots"
script_timeout = 5
[[hooks]]
phase = "access"
file = "../hooks/a.lua"
path = "/members/*.php"
`,
		"vhosts.d/b.toml": "server_name = \"b.example\"\nroot = \"../nope\"\nallow_http = \"yes\"\n",
		"hooks/a.lua":     "return nil\n",
	})
	_, err := Load(filepath.Join(dir, "hostd.toml"))
	if err == nil {
		t.Fatal("Load succeeded")
	}
	var got []string
	for _, e := range Errors(err) {
		got = append(got, strings.TrimPrefix(e.Error(), dir+"/"))
	}
	want := []string{
		`hostd.toml:2:16: listen_https ":443x": port "443x" is not a number`,
		`hostd.toml:3:15: listen_http "127.0.0.1:99999": port 99999 is out of range`,
		`hostd.toml:4:16: admin_listen "example.org:9443": "example.org" is not an IP address`,
		`hostd.toml:6:16: server.read_timeout: want a duration string such as "30s", not 60`,
		`vhosts.d/a.toml:5:15: limits.max_workers: want an integer, not a string`,
		`vhosts.d/a.toml:6:12: limits.max_body: invalid size "lots"`,
		`vhosts.d/a.toml:7:18: limits.script_timeout: want a duration string such as "30s", not 5`,
		`vhosts.d/a.toml:11: hook path "/members/*.php": '*' is only allowed at the end`,
		`vhosts.d/b.toml:2: root ` + dir + `/nope: no such file or directory`,
		`vhosts.d/b.toml:3:14: allow_http: want true or false, not a string`,
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("missing %s", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
}

func TestLoadGlobMatchesNothing(t *testing.T) {
	dir := writeTree(t, map[string]string{"hostd.toml": mainOK})
	_, err := Load(filepath.Join(dir, "hostd.toml"))
	if err == nil || !strings.Contains(err.Error(), `hostd.toml:4: vhosts "vhosts.d/*.toml" matches no file`) {
		t.Fatalf("err = %v", err)
	}
}

// TestLoadPartial: valid vhosts load, broken files come back with their
// errors; a name claimed twice breaks both files.
func TestLoadPartial(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"hostd.toml":          mainOK,
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../public\"\nrooot = 1\n",
		"vhosts.d/bob.toml":   "server_name = \"bob.example\"\nroot = \"../public\"\n",
		"vhosts.d/carol.toml": "server_name = \"carol.example\"\nroot = \"../public\"\n",
		"vhosts.d/dave.toml":  "server_name = \"dave.example\"\naliases = [\"carol.example\"]\nroot = \"../public\"\n",
		"vhosts.d/eve.toml":   "server_name = \"eve.example\nroot = \"../public\"\n",
	})
	cfg, broken, err := LoadPartial(filepath.Join(dir, "hostd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.VHosts) != 1 || cfg.VHosts[0].ServerName != "bob.example" {
		t.Fatalf("valid vhosts %v", cfg.VHosts)
	}
	var files []string
	for _, b := range broken {
		files = append(files, filepath.Base(b.File))
		if len(b.Errs) == 0 {
			t.Errorf("%s: no errors", b.File)
		}
	}
	if !slices.Equal(files, []string{"alice.toml", "carol.toml", "dave.toml", "eve.toml"}) {
		t.Errorf("broken %v", files)
	}
	if !slices.Equal(broken[0].Names, []string{"alice.example"}) || broken[3].Names != nil {
		t.Errorf("names %v %v", broken[0].Names, broken[3].Names)
	}
	if e := broken[1].Errs[0]; e.Line != 1 || !strings.Contains(e.Msg, "dave.toml:2") {
		t.Errorf("carol: %v", e)
	}
	// Load is strict.
	if _, err := Load(filepath.Join(dir, "hostd.toml")); err == nil || len(Errors(err)) != 4 {
		t.Errorf("Load: %v", err)
	}
}

func TestLoadTLSSettings(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"hostd.toml":      mainOK + "tls_profile = \"modern\"\n",
		"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\nhsts = true\n",
		"vhosts.d/b.toml": "server_name = \"b.example\"\nroot = \"../public\"\ntls_profile = \"intermediate\"\nhsts = \"max-age=60; includeSubDomains\"\n",
		"vhosts.d/c.toml": "server_name = \"c.example\"\nroot = \"../public\"\ntls_profile = \"old\"\nhsts = \"includeSubDomains\"\n",
	})
	cfg, broken, err := LoadPartial(filepath.Join(dir, "hostd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Lookup("a.example"), cfg.Lookup("b.example")
	if a.TLSProfile != TLSModern || a.HSTS != DefaultHSTS || b.TLSProfile != TLSIntermediate || b.HSTS != "max-age=60; includeSubDomains" {
		t.Errorf("a %q %q, b %q %q", a.TLSProfile, a.HSTS, b.TLSProfile, b.HSTS)
	}
	if len(broken) != 1 || len(broken[0].Errs) != 2 || broken[0].Errs[0].Line != 3 || broken[0].Errs[1].Line != 4 {
		t.Errorf("broken %v", broken[0].Errs)
	}
}
