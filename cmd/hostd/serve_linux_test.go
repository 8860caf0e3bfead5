package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// TestServeDropsBoundingSet runs the real binary as root and checks that
// every thread of `hostd serve` has a bounding set of CAP_SETUID and
// CAP_SETGID only (0xc0), whether the binary links cgo or not.
func TestServeDropsBoundingSet(t *testing.T) {
	sandboxtest.RequireRoot(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "hostd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	os.MkdirAll(filepath.Join(dir, "vhosts.d"), 0o755)
	os.MkdirAll(filepath.Join(dir, "pub"), 0o755)
	os.WriteFile(filepath.Join(dir, "hostd.toml"), []byte("[server]\nlisten_https = \"127.0.0.1:0\"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "vhosts.d/a.toml"), []byte("server_name = \"a.example\"\nroot = \"../pub\"\nuser = \"31001\"\nsandbox = \"thread\"\n"), 0o644)
	cmd := exec.Command(bin, "serve", "--config", filepath.Join(dir, "hostd.toml"))
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	serving := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "msg=serving") {
				serving <- true
			}
		}
		serving <- false
	}()
	select {
	case ok := <-serving:
		if !ok {
			t.Fatal("hostd serve exited before serving")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("hostd serve did not start")
	}
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/*/status")
	if len(tasks) == 0 {
		t.Fatal("no threads found")
	}
	for _, st := range tasks {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "CapBnd:") && strings.TrimSpace(strings.TrimPrefix(line, "CapBnd:")) != "00000000000000c0" {
				t.Errorf("%s: %s, want 00000000000000c0", st, line)
			}
			if strings.HasPrefix(line, "Uid:") && strings.Fields(line)[2] != "0" {
				t.Errorf("%s: %s: an idle server thread carries a tenant uid", st, line)
			}
		}
	}
}
