package tenant

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPHPDefaultsAndSettings(t *testing.T) {
	fpm := filepath.Join(t.TempDir(), "php-fpm")
	if err := os.WriteFile(fpm, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := writeTree(t, map[string]string{
		"hostd.toml": mainOK,
		"vhosts.d/a.toml": `server_name = "a.example"
root = "../public"
user = "31001"
[php]
enabled = true
fpm = "` + fpm + `"
tmp_dir = "../other"
ini = { memory_limit = "64M", display_errors = false, max_execution_time = 5 }
`,
	})
	cfg, err := Load(filepath.Join(dir, "hostd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.VHosts[0].PHP
	if p.Workers != 4 || p.MaxRequests != 500 || p.IdleTimeout.Std() != 10*time.Second ||
		p.Timeout.Std() != 30*time.Second || len(p.Extensions) != 1 || p.Extensions[0] != ".php" {
		t.Errorf("defaults not applied: %+v", p)
	}
	if p.TmpDir != filepath.Join(dir, "other") {
		t.Errorf("tmp_dir %q, want it relative to the vhost file", p.TmpDir)
	}
	want := map[string]string{"memory_limit": "64M", "display_errors": "off", "max_execution_time": "5"}
	for k, v := range want {
		if p.Settings[k] != v {
			t.Errorf("setting %s = %q, want %q", k, p.Settings[k], v)
		}
	}
}

func TestPHPErrors(t *testing.T) {
	cases := []struct {
		name, vhost, want string
	}{
		{"no php-fpm", "user = \"31001\"\n[php]\nenabled = true\nfpm = \"/nonexistent/php-fpm8.2\"\n", "install the Debian package php8.2-fpm"},
		{"no user", "[php]\nenabled = true\n", "[php] needs user"},
		{"root", "user = \"0\"\n[php]\nenabled = true\n", "refuses uid/gid 0"},
		{"both handlers", "user = \"31001\"\n[cgi]\nenabled = true\ninterpreters = { \".php\" = \"/bin/sh\" }\n[php]\nenabled = true\n", "served by both"},
		{"bad ini name", "user = \"31001\"\n[php]\nini = { \"a b\" = \"x\" }\n", "setting name"},
		{"ini newline", "user = \"31001\"\n[php]\nini = { x = \"a\\nb\" }\n", "must not contain a newline"},
		{"workers", "user = \"31001\"\n[php]\nworkers = -2\n", "php workers"},
		{"typo", "user = \"31001\"\n[php]\nworker = 2\n", "did you mean \"workers\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"hostd.toml":      mainOK,
				"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../public\"\n" + tc.vhost,
			})
			_, err := Load(filepath.Join(dir, "hostd.toml"))
			var el ErrorList
			if !errors.As(err, &el) {
				t.Fatalf("Load: %v, want an ErrorList", err)
			}
			for _, e := range el {
				if strings.Contains(e.Msg, tc.want) && e.Line > 0 {
					return
				}
			}
			t.Fatalf("errors %v: want one with a line containing %q", err, tc.want)
		})
	}
}
