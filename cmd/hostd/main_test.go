package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

func TestCheckCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"check", "--config", "../../examples/hostd.toml"}, &out, &errb); code != 0 {
		t.Fatalf("check examples: exit %d\n%s", code, errb.String())
	}
	auto, _ := sandbox.AutoMode()
	for _, want := range []string{"alice.example\t", "sandbox=auto:" + string(auto) + "\tuid 31001 gid 31001", "bob.example\t",
		"sandbox=auto:" + string(auto) + "\tuid 31002", "sandbox uring: ", "sandbox auto: chooses " + string(auto), "ok, 2 vhosts"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check output lacks %q:\n%s", want, out.String())
		}
	}

	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "vhosts.d"), 0o755)
	os.MkdirAll(filepath.Join(dir, "pub"), 0o755)
	os.WriteFile(filepath.Join(dir, "hostd.toml"), []byte("[server]\nlisten_https = \"127.0.0.1:0\"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "vhosts.d/a.toml"), []byte("server_name = \"a.example\"\nroot = \"../pub\"\nrun_as_server = true\n[[hooks]]\nphase = \"content\"\nfile = \"h.lua\"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "vhosts.d/h.lua"), []byte("r:write(\"x\"\n\n"), 0o644)
	out.Reset()
	errb.Reset()
	if code := run([]string{"check", "--config", filepath.Join(dir, "hostd.toml")}, &out, &errb); code != 1 {
		t.Fatalf("check broken hook: exit %d", code)
	}
	if want := filepath.Join(dir, "vhosts.d/h.lua") + ":3: syntax error"; !strings.HasPrefix(errb.String(), want) {
		t.Errorf("stderr %q, want prefix %q", errb.String(), want)
	}
	if code := run([]string{"frobnicate"}, &out, &errb); code != 2 {
		t.Errorf("unknown command: exit %d", code)
	}
	out.Reset()
	if code := run([]string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "hostd ") {
		t.Errorf("version: %d %q", code, out.String())
	}
}

// TestCheckRunAsServer: on a privileged server, `hostd check` refuses hooks
// and CGI that would run as the server (exit 1, FILE:LINE), and with
// run_as_server = true accepts them with a loud warning and says who runs
// each kind of work.
func TestCheckRunAsServer(t *testing.T) {
	sandboxtest.RequireRoot(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "vhosts.d"), 0o755)
	os.MkdirAll(filepath.Join(dir, "pub"), 0o755)
	os.WriteFile(filepath.Join(dir, "hostd.toml"), []byte("[server]\nlisten_https = \"127.0.0.1:0\"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "vhosts.d/h.lua"), []byte("r:write(\"x\")\n"), 0o644)
	vhost := filepath.Join(dir, "vhosts.d/a.toml")
	body := "server_name = \"a.example\"\nroot = \"../pub\"\nsandbox = \"none\"\n%s[cgi]\nenabled = true\n[[hooks]]\nphase = \"content\"\nfile = \"h.lua\"\n"
	os.WriteFile(vhost, []byte(strings.Replace(body, "%s", "", 1)), 0o644)
	var out, errb bytes.Buffer
	if code := run([]string{"check", "--config", filepath.Join(dir, "hostd.toml")}, &out, &errb); code != 1 ||
		!strings.HasPrefix(errb.String(), vhost+":3: sandbox \"none\" runs this vhost's hooks and CGI scripts with the server's identity") {
		t.Fatalf("check: exit %d, stderr %q", code, errb.String())
	}
	os.WriteFile(vhost, []byte(strings.Replace(body, "%s", "run_as_server = true\n", 1)), 0o644)
	out.Reset()
	errb.Reset()
	if code := run([]string{"check", "--config", filepath.Join(dir, "hostd.toml")}, &out, &errb); code != 0 {
		t.Fatalf("check with run_as_server: exit %d, stderr %q", code, errb.String())
	}
	if !strings.Contains(out.String(), "static: server (uid 0, privileged)\thook code: server (uid 0, privileged)\tcgi: server (uid 0, privileged) (cpu 30s") ||
		!strings.Contains(errb.String(), "WARNING: a.example") || !strings.Contains(errb.String(), "hooks and CGI run as the server") {
		t.Errorf("check output:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
}
