package tenant

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// encoded returns the TOML of v.
func encoded(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	if err := Encode(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestEncodeRoundTrip loads a configuration that sets keys of every kind
// (strings, lists, sizes, durations, maps, arrays of tables, a float, a
// pointer), writes it back with Encode into another directory, loads that
// and compares: the same tables, and the same values Load resolves.
func TestEncodeRoundTrip(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"hostd.toml": mainOK + `access_log = ""
read_timeout = "45s"
max_header_bytes = "32KiB"
tenant_cpu_share = 0.25
max_conns_per_ip = -1
log_redact_query = ["token"]
min_uid = 500

[sessions]
cookie = "sid"
ttl = "10m"
`,
		"vhosts.d/alice.toml": `server_name = "alice.example"
aliases = ["www.alice.example"]
root = "../public"
user = "31001"
run_as_server = true
index = ["index.htm", "index.html"]
hsts = true
outbound = ["api.example.com", "10.0.0.0/8"]
[limits]
script_timeout = "2s"
max_body = "2MiB"
max_concurrent = -1
[cgi]
enabled = true
extensions = [".cgi", ".pl"]
interpreters = { ".pl" = "/usr/bin/perl" }
[[hooks]]
phase = "access"
file = "../hooks/a.lua"
path = "/admin/*"
[[hooks]]
phase = "content"
file = "../hooks/a.lua"
[[respond]]
path = "/ping"
body = "pong\n"
status = 201
`,
		"vhosts.d/bob.toml": "server_name = \"bob.example\"\nroot = \"../other\"\n",
		"hooks/a.lua":       "return nil\n",
	})
	cfg, err := Load(filepath.Join(dir, "hostd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := WriteFile(filepath.Join(out, "hostd.toml"), cfg.MainFile()); err != nil {
		t.Fatal(err)
	}
	for _, v := range cfg.VHosts {
		if err := WriteFile(filepath.Join(out, "vhosts.d", filepath.Base(v.File)), v); err != nil {
			t.Fatal(err)
		}
	}
	again, err := Load(filepath.Join(out, "hostd.toml"))
	if err != nil {
		b, _ := os.ReadFile(filepath.Join(out, "vhosts.d", "alice.toml"))
		t.Fatalf("load the encoded configuration: %v\nalice.toml:\n%s", err, b)
	}
	if !reflect.DeepEqual(again.Server, cfg.Server) {
		t.Errorf("server:\n%s\nwant\n%s", encoded(t, MainFile{Server: again.Server}), encoded(t, MainFile{Server: cfg.Server}))
	}
	again.Sessions.line = cfg.Sessions.line
	if !reflect.DeepEqual(again.Sessions, cfg.Sessions) {
		t.Errorf("sessions: %+v, want %+v", again.Sessions, cfg.Sessions)
	}
	if len(again.VHosts) != len(cfg.VHosts) {
		t.Fatalf("%d vhosts, want %d", len(again.VHosts), len(cfg.VHosts))
	}
	for i, v := range cfg.VHosts {
		w := again.VHosts[i]
		if got, want := encoded(t, w), encoded(t, v); got != want {
			t.Errorf("%s:\n%s\nwant\n%s", v.ServerName, got, want)
		}
		if w.UID != v.UID || w.GID != v.GID || w.Mode != v.Mode || !reflect.DeepEqual(w.Limits, v.Limits) {
			t.Errorf("%s: uid %d gid %d mode %s limits %+v, want %d %d %s %+v", v.ServerName, w.UID, w.GID, w.Mode, w.Limits, v.UID, v.GID, v.Mode, v.Limits)
		}
	}
	// The explicit keys are there, the fields Load sets are not.
	alice := encoded(t, cfg.VHosts[0])
	for _, want := range []string{`script_timeout = "2s"`, "max_body = 2097152", `".pl" = "/usr/bin/perl"`, "[[respond]]", `hsts = "max-age=31536000"`} {
		if !strings.Contains(alice, want) {
			t.Errorf("alice.toml lacks %q:\n%s", want, alice)
		}
	}
	for _, no := range []string{"File", "UID", "Mode", "AutoSandbox"} {
		if strings.Contains(alice, no) {
			t.Errorf("alice.toml has %s:\n%s", no, alice)
		}
	}
}

// TestEncodeZero: a zero vhost writes nothing but its keys; Encode
// refuses other types.
func TestEncodeZero(t *testing.T) {
	if got := encoded(t, &VHost{ServerName: "a.example", Root: "/srv/a"}); got != "server_name = \"a.example\"\nroot = \"/srv/a\"\n" {
		t.Errorf("got %q", got)
	}
	if err := Encode(new(bytes.Buffer), cfgNotAFile{}); err == nil {
		t.Error("Encode accepted a type that is no file")
	}
}

type cfgNotAFile struct{}

// TestWithDefaults: the defaults WithDefaults sets are the ones Load
// applies to a file that sets no keys.
func TestWithDefaults(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"hostd.toml":        mainOK,
		"vhosts.d/bob.toml": "server_name = \"bob.example\"\nroot = \"../other\"\n",
	})
	cfg, err := Load(filepath.Join(dir, "hostd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	c := &Config{Server: Server{ListenHTTPS: "127.0.0.1:8443", ListenHTTP: "127.0.0.1:8080", VHosts: "vhosts.d/*.toml"},
		VHosts: []*VHost{{ServerName: "bob.example", Root: cfg.VHosts[0].Root}}}
	c.WithDefaults()
	if !reflect.DeepEqual(c.VHosts[0].Limits, cfg.VHosts[0].Limits) {
		t.Errorf("limits %+v, want %+v", c.VHosts[0].Limits, cfg.VHosts[0].Limits)
	}
	v, w := c.VHosts[0], cfg.VHosts[0]
	if !reflect.DeepEqual(v.Index, w.Index) || !reflect.DeepEqual(v.CGI, w.CGI) {
		t.Errorf("index %q cgi %+v, want %q %+v", v.Index, v.CGI, w.Index, w.CGI)
	}
	vp, wp := v.PHP, w.PHP
	wp.INI, wp.Settings = nil, nil // Load makes empty maps of an absent ini
	if !reflect.DeepEqual(vp, wp) {
		t.Errorf("php %+v, want %+v", vp, wp)
	}
	// Load also resolves the paths below state_dir, default_sandbox
	// and write_timeout, which WithDefaults leaves.
	s := cfg.Server
	s.SessionKeys, s.AdminTokenFile, s.DefaultSandbox, s.WriteTimeout = "", "", "", 0
	if !reflect.DeepEqual(c.Server, s) {
		t.Errorf("server:\n%s\nwant\n%s", encoded(t, MainFile{Server: c.Server}), encoded(t, MainFile{Server: s}))
	}
}
