package main

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// buildHostd builds the hostd binary into dir.
func buildHostd(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "hostd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// TestSystemdUnitVerifies runs systemd-analyze verify (Debian package
// systemd, in the Makefile's APT_PKGS) on examples/systemd/hostd.service
// with ExecStart pointing at a real hostd binary: it must print nothing.
func TestSystemdUnitVerifies(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		sandboxtest.Skipf(t, "systemd-analyze not installed (make deps installs it)")
	}
	dir := t.TempDir()
	bin := buildHostd(t, dir)
	unit, err := os.ReadFile("../../examples/systemd/hostd.service")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hostd.service")
	os.WriteFile(path, bytes.ReplaceAll(unit, []byte("/usr/local/bin/hostd"), []byte(bin)), 0o644)
	out, err := exec.Command("systemd-analyze", "verify", "--man=no", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestLogrotateSnippet has logrotate parse examples/systemd/hostd.logrotate
// (debug mode: nothing rotated) with its paths moved into a temp dir.
func TestLogrotateSnippet(t *testing.T) {
	if _, err := exec.LookPath("logrotate"); err != nil {
		sandboxtest.Skipf(t, "logrotate not installed (make deps installs it)")
	}
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/systemd/hostd.logrotate")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "log"), 0o755)
	os.WriteFile(filepath.Join(dir, "log", "access.log"), []byte("x\n"), 0o644)
	conf := filepath.Join(dir, "hostd.logrotate")
	os.WriteFile(conf, bytes.ReplaceAll(src, []byte("/var/log/hostd"), []byte(filepath.Join(dir, "log"))), 0o644)
	out, err := exec.Command("logrotate", "--debug", "--force", "--state", filepath.Join(dir, "state"), conf).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("error")) || !bytes.Contains(out, []byte("hostd reopen-logs")) {
		t.Fatalf("logrotate --debug: %v\n%s", err, out)
	}
}

// unitCapabilities returns the unit's AmbientCapabilities= as setpriv's
// capability list ("+net_bind_service,+setuid,...").
func unitCapabilities(t *testing.T) string {
	t.Helper()
	unit, err := os.ReadFile("../../examples/systemd/hostd.service")
	if err != nil {
		t.Fatal(err)
	}
	var ambient, bounding string
	for _, l := range strings.Split(string(unit), "\n") {
		if v, ok := strings.CutPrefix(l, "AmbientCapabilities="); ok {
			ambient = v
		}
		if v, ok := strings.CutPrefix(l, "CapabilityBoundingSet="); ok {
			bounding = v
		}
	}
	if ambient == "" || ambient != bounding || !strings.Contains(string(unit), "SecureBits=noroot-locked") {
		t.Fatalf("unit: AmbientCapabilities=%q CapabilityBoundingSet=%q", ambient, bounding)
	}
	var caps []string
	for _, c := range strings.Fields(ambient) {
		caps = append(caps, "+"+strings.ToLower(strings.TrimPrefix(c, "CAP_")))
	}
	return strings.Join(caps, ",")
}

// TestServeUnderUnitCapabilities starts hostd the way the unit does, as
// uid 0 without root's implicit capabilities (setpriv: securebits
// noroot,noroot_locked; the unit's ambient set and bounding set;
// no_new_privs), as a Type=notify service (NOTIFY_SOCKET): it must report
// READY, serve a thread-mode tenant, kill a CGI script's process group at
// cgi_timeout, report RELOADING/READY around `hostd reload`, and STOPPING.
// Without CAP_SYS_ADMIN it runs CGI without PID namespaces and says so
// (one warning; hostd status).
func TestServeUnderUnitCapabilities(t *testing.T) {
	sandboxtest.RequireRoot(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv (util-linux) is missing")
	}
	caps := unitCapabilities(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	bin := buildHostd(t, dir)
	files := map[string]string{
		"hostd.toml":      "[server]\nlisten_https = \"127.0.0.1:0\"\nvhosts = \"vhosts.d/*.toml\"\n",
		"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../a\"\nuser = \"31002\"\nsandbox = \"inline\"\n[cgi]\nenabled = true\n[limits]\ncgi_timeout = \"1s\"\n",
		"vhosts.d/b.toml": "server_name = \"b.example\"\nroot = \"../b\"\nuser = \"31001\"\nsandbox = \"thread\"\n",
		"a/cgi/slow.cgi":  "#!/bin/sh\necho 'Content-Type: text/plain'\necho\necho $$ > /proc/self/fd/2\nsleep 30\n",
		"b/index.html":    "b home\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(filepath.Join(dir, "a/cgi/slow.cgi"), 31002, 31002); err != nil {
		t.Fatal(err)
	}
	os.Chown(filepath.Join(dir, "a/cgi"), 31002, 31002)

	sock := filepath.Join(dir, "notify.sock")
	nl, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	notes := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := nl.Read(buf)
			if err != nil {
				close(notes)
				return
			}
			notes <- string(buf[:n])
		}
	}()
	expect := func(prefix string) {
		t.Helper()
		select {
		case m := <-notes:
			if !strings.HasPrefix(m, prefix) {
				t.Fatalf("sd_notify %q, want %s", m, prefix)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no sd_notify %s", prefix)
		}
	}

	config := filepath.Join(dir, "hostd.toml")
	cmd := exec.Command("setpriv", "--securebits", "+noroot,+noroot_locked",
		"--bounding-set", "-all,"+caps, "--inh-caps", "-all,"+caps, "--ambient-caps", "-all,"+caps,
		"--no-new-privs", bin, "serve", "--config", config)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var logs bytes.Buffer
	addrc := make(chan string, 1)
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l := sc.Text()
			logs.WriteString(l + "\n")
			if strings.Contains(l, "msg=serving") {
				for _, f := range strings.Fields(l) {
					if a, ok := strings.CutPrefix(f, "https="); ok {
						addrc <- a
					}
				}
			}
		}
	}()
	expect("READY=1")
	addr := <-addrc
	status, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "CapEff:") && !strings.HasSuffix(l, "00000000000004e0") {
			t.Errorf("effective capabilities: %s, want NET_BIND_SERVICE SETUID SETGID KILL (0x4e0)", l)
		}
	}
	if code := httpsGet(t, addr, "b.example", "/"); code != 200 {
		t.Errorf("thread-mode tenant: %d", code)
	}
	// The CGI script outlives cgi_timeout: its process group is killed.
	start := time.Now()
	httpsGet(t, addr, "a.example", "/cgi/slow.cgi")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the CGI request took %s: not killed at cgi_timeout", d)
	}
	sandboxtest.WaitFor(t, "the CGI script's sleep is gone", func() bool {
		out, _ := exec.Command("pgrep", "-u", "31002", "-f", "sleep 30").Output()
		return len(bytes.TrimSpace(out)) == 0
	})

	// Without CAP_SYS_ADMIN, CGI runs without PID namespaces (as above),
	// and hostd says so: hostd status here, one warning in the log below.
	out, err := exec.Command(bin, "status", "--config", config).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "processes: WITHOUT PID namespaces (") || !strings.Contains(string(out), "CAP_SYS_ADMIN") {
		t.Errorf("hostd status: %v\n%s\nwant it to report the missing PID namespaces and why", err, out)
	}

	out, err = exec.Command(bin, "reload", "--config", config).CombinedOutput()
	if err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	expect("RELOADING=1\nMONOTONIC_USEC=")
	expect("READY=1")
	cmd.Process.Signal(syscall.SIGTERM)
	expect("STOPPING=1")
	<-logDone
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve: %v\n%s", err, logs.String())
	}
	if strings.Contains(logs.String(), "CAP_KILL is not effective") {
		t.Errorf("hostd warns about CAP_KILL:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "run without PID namespaces"); n != 1 {
		t.Errorf("%d warnings about PID namespaces, want 1:\n%s", n, logs.String())
	}
}
