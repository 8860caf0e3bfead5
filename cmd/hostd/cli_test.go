package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/host/admin"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// writeFiles writes name -> content under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// brokenHookConfig has a valid vhost and one whose Lua hook has a syntax
// error at line 3.
func brokenHookConfig(t *testing.T) (dir, config, hook string) {
	dir = t.TempDir()
	writeFiles(t, dir, map[string]string{
		"hostd.toml":      "[server]\nlisten_https = \"127.0.0.1:0\"\nadmin_listen = \"127.0.0.1:0\"\n",
		"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../pub\"\n",
		"vhosts.d/b.toml": "server_name = \"b.example\"\nroot = \"../pub\"\nrun_as_server = true\n[[hooks]]\nphase = \"content\"\nfile = \"h.lua\"\n",
		"vhosts.d/h.lua":  "r:write(\"x\"\n\n",
		"pub/index.html":  "home\n",
	})
	return dir, filepath.Join(dir, "hostd.toml"), filepath.Join(dir, "vhosts.d/h.lua")
}

// TestServeRefusesWhatCheckRefuses: serve runs check's validation, hooks
// included, and refuses to start on any error by default.
func TestServeRefusesWhatCheckRefuses(t *testing.T) {
	_, config, hook := brokenHookConfig(t)
	want := hook + ":3: syntax error"
	var out, errb bytes.Buffer
	if code := run([]string{"check", "--config", config}, &out, &errb); code != 1 || !strings.HasPrefix(errb.String(), want) {
		t.Fatalf("check: exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"serve", "--config", config}, &out, &errb); code != 1 || !strings.HasPrefix(errb.String(), want) ||
		!strings.Contains(errb.String(), "not starting (--skip-broken-vhosts starts without them)") {
		t.Fatalf("serve: exit %d, stderr %q", code, errb.String())
	}
}

// TestServeSkipBrokenVHosts starts with --skip-broken-vhosts: the valid
// vhost is served, the broken one is not, and status lists its errors.
func TestServeSkipBrokenVHosts(t *testing.T) {
	dir, config, hook := brokenHookConfig(t)
	bin := buildHostd(t, dir)
	cmd := exec.Command(bin, "serve", "--config", config, "--skip-broken-vhosts")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	var https string
	sc := bufio.NewScanner(stderr)
	var log strings.Builder
	for https == "" && sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		for _, f := range strings.Fields(sc.Text()) {
			if a, ok := strings.CutPrefix(f, "https="); ok && strings.Contains(sc.Text(), "msg=serving") {
				https = a
			}
		}
	}
	go io.Copy(io.Discard, stderr)
	if https == "" || !strings.Contains(log.String(), hook+":3: syntax error") {
		t.Fatalf("no serving line, or the broken hook not listed:\n%s", log.String())
	}
	if code := httpsGet(t, https, "a.example", "/"); code != 200 {
		t.Errorf("a.example: %d", code)
	}
	if code := httpsGet(t, https, "b.example", "/"); code != 404 {
		t.Errorf("b.example (broken): %d, want 404", code)
	}
	var st admin.Status
	var stOut, stErr bytes.Buffer
	c := exec.Command(bin, "status", "--config", config, "--json")
	c.Stdout, c.Stderr = &stOut, &stErr
	if err := c.Run(); err != nil {
		t.Fatalf("status: %v %s", err, stErr.String())
	}
	if err := json.Unmarshal(stOut.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	bfile := filepath.Join(dir, "vhosts.d/b.toml")
	if errs := st.ConfigErrors[bfile]; len(errs) != 1 || !strings.HasPrefix(errs[0], hook+":3:") {
		t.Errorf("status config_errors %v", st.ConfigErrors)
	}
	if _, ok := st.VHosts["a.example"]; !ok || len(st.VHosts) != 1 {
		t.Errorf("status vhosts %v", st.VHosts)
	}
}

// TestCommandLine: --help exits 0 with the flags for every command; a
// positional argument is a usage error naming --config; check reports
// an address it cannot bind at its FILE:LINE:COL.
func TestCommandLine(t *testing.T) {
	for _, c := range []string{"serve", "check", "status", "reload", "reopen-logs", "trace", "gen-vhosts", "bench", "version", "hook"} {
		var out, errb bytes.Buffer
		if code := run([]string{c, "--help"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "usage: hostd "+c) {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q", c, code, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"check", "base/hostd.toml"}, &out, &errb); code != 2 ||
		errb.String() != "hostd check: unexpected argument \"base/hostd.toml\" (the configuration is given with --config FILE)\n" {
		t.Errorf("positional argument: exit %d, %q", code, errb.String())
	}
	dir := t.TempDir()
	// 192.0.2.1 (TEST-NET-1) is no address of this machine.
	writeFiles(t, dir, map[string]string{
		"hostd.toml":      "[server]\nlisten_https = \"127.0.0.1:0\"\nlisten_http  = \"192.0.2.1:8080\"\n",
		"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../pub\"\n",
		"pub/index.html":  "x\n",
	})
	out.Reset()
	errb.Reset()
	if code := run([]string{"check", "--config", filepath.Join(dir, "hostd.toml")}, &out, &errb); code != 1 ||
		!strings.HasPrefix(errb.String(), filepath.Join(dir, "hostd.toml")+":3:16: listen_http \"192.0.2.1:8080\" cannot be bound: cannot assign requested address") {
		t.Errorf("unbindable address: exit %d, %q", code, errb.String())
	}
}

// TestMakeBuildVersion builds with the Makefile and checks that `hostd
// version` names the commit of HEAD and a build time.
func TestMakeBuildVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hostd")
	}
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		sandboxtest.Skipf(t, "not a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "hostd")
	cmd := exec.Command("make", "-C", "../..", "build", "BIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	v := string(out)
	if !strings.Contains(v, "(revision "+strings.TrimSpace(string(rev))) || !strings.Contains(v, ", built "+time.Now().UTC().Format("2006-01-02")) {
		t.Errorf("version %q, want revision %s and today's build time", v, rev)
	}
}
