package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// TestURingUnavailableFallsBack runs the real binary under a seccomp
// filter that fails io_uring_setup with EPERM (as a container runtime's
// default profile does): `hostd check` reports uring unusable and refuses
// a vhost asking for it, "auto" falls back to thread, and `hostd serve`
// still serves, with the tenant's identity checked by the kernel.
func TestURingUnavailableFallsBack(t *testing.T) {
	sandboxtest.RequireRoot(t)
	if testing.Short() {
		t.Skip("builds and runs hostd")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	for p := filepath.Dir(dir); p != "/"; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil {
			if fi.Mode().Perm()&0o001 == 0 { // never touch /tmp's sticky bit
				os.Chmod(p, fi.Mode()&(os.ModePerm|os.ModeSticky|os.ModeSetuid|os.ModeSetgid)|0o111)
			}
		}
	}
	bin, wrap := filepath.Join(dir, "hostd"), filepath.Join(dir, "seccompexec")
	for out, pkg := range map[string]string{bin: ".", wrap: "./testdata/seccompexec"} {
		if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, b)
		}
	}
	write := func(name, body string, uid int, mode os.FileMode) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		os.Chown(p, uid, uid)
		os.Chmod(p, mode)
	}
	// No default_sandbox: as root that is "auto".
	write("hostd.toml", "[server]\nlisten_https = \"127.0.0.1:0\"\n", 0, 0o644)
	write("vhosts.d/a.toml", "server_name = \"a.example\"\nroot = \"../pub\"\nuser = \"31001\"\n", 0, 0o644)
	write("pub/mine.txt", "mine\n", 31001, 0o600)
	write("pub/root.txt", "root's\n", 0, 0o600)
	os.Chown(filepath.Join(dir, "pub"), 31001, 31001)
	cfgFile := filepath.Join(dir, "hostd.toml")

	// Without the filter (when the machine has io_uring) auto is uring.
	if sandbox.ProbeURing() == nil {
		out, _ := exec.Command(bin, "check", "--config", cfgFile).CombinedOutput()
		if !strings.Contains(string(out), "sandbox=auto:uring") {
			t.Errorf("check without the filter:\n%s", out)
		}
	}
	// Under the filter: uring unusable, auto chooses thread.
	out, err := exec.Command(wrap, bin, "check", "--config", cfgFile).CombinedOutput()
	if err != nil {
		t.Fatalf("check under the filter: %v\n%s", err, out)
	}
	for _, want := range []string{"sandbox=auto:thread\tuid 31001", "sandbox uring: not usable: io_uring: io_uring_setup: operation not permitted",
		"seccomp", "sandbox auto: chooses thread"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("check under the filter lacks %q:\n%s", want, out)
		}
	}
	// A vhost that asks for uring is a configuration error naming the cause.
	write("vhosts.d/b.toml", "server_name = \"b.example\"\nroot = \"../pub\"\nuser = \"31002\"\nsandbox = \"uring\"\n", 0, 0o644)
	out, err = exec.Command(wrap, bin, "check", "--config", cfgFile).CombinedOutput()
	if code := exitCode(err); code != 1 {
		t.Fatalf("check with sandbox = \"uring\" under the filter: exit %d\n%s", code, out)
	}
	want := filepath.Join(dir, "vhosts.d/b.toml") + `:4: sandbox "uring": io_uring is not usable here: io_uring: io_uring_setup: operation not permitted`
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("check output %q, want prefix %q", out, want)
	}
	os.Remove(filepath.Join(dir, "vhosts.d/b.toml"))

	// The server still serves, in mode thread.
	cmd := exec.Command(wrap, bin, "serve", "--config", cfgFile)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	addrc, logc := make(chan string, 1), make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l := sc.Text()
			if strings.Contains(l, "sandbox auto") {
				logc <- l
			}
			if strings.Contains(l, "msg=serving") {
				for _, f := range strings.Fields(l) {
					if a, ok := strings.CutPrefix(f, "https="); ok {
						addrc <- a
					}
				}
			}
		}
		close(addrc)
	}()
	var addr string
	select {
	case addr = <-addrc:
		if addr == "" {
			t.Fatal("hostd serve exited before serving")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hostd serve did not start")
	}
	select {
	case l := <-logc:
		if !strings.Contains(l, "mode thread") || !strings.Contains(l, "seccomp") {
			t.Errorf("startup log: %s", l)
		}
	default:
		t.Error("no startup log line about sandbox auto")
	}
	for path, code := range map[string]int{"/mine.txt": 200, "/root.txt": 403} {
		if got := httpsGet(t, addr, "a.example", path); got != code {
			t.Errorf("GET %s: %d, want %d", path, got, code)
		}
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
