package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox/sandboxtest"
	"github.com/hostd/hostd/tenant"
)

// containUID is the tenant of TestTenantProcessesDieWithHostd, used by no
// other test: the test counts every process of this uid on the machine.
const containUID = 31041

// uidProcesses returns the live (not zombie) processes whose real uid is
// uid, from the Uid lines of /proc/*/status.
func uidProcesses(uid int) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		st := string(b)
		if strings.Contains(st, "Uid:\t"+strconv.Itoa(uid)+"\t") && !strings.Contains(st, "(zombie)") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestTenantProcessesDieWithHostd runs a real `hostd serve` with a tenant
// that has a php-fpm pool (master, workers, and a process a PHP script
// detached with setsid) and a CGI script in flight that detached a daemon
// too, then stops hostd: with SIGKILL (a crash: hostd cleans up nothing)
// and with SIGTERM (a clean stop). Either way no process of the tenant's
// uid may be left: every child of hostd is PID 1 of its own PID namespace
// and dies with hostd (parent-death signal), taking its namespace along.
func TestTenantProcessesDieWithHostd(t *testing.T) {
	sandboxtest.RequireRoot(t)
	if _, err := os.Stat(tenant.DefaultPHPFPM); err != nil {
		t.Fatalf("%s: %v (make deps installs %s)", tenant.DefaultPHPFPM, err, tenant.PHPFPMPackage)
	}
	dir := t.TempDir()
	// The tenant's processes must reach its root.
	for p := dir; p != "/"; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 {
			os.Chmod(p, fi.Mode().Perm()|0o111)
		}
	}
	bin := buildHostd(t, dir)
	writeFiles(t, dir, map[string]string{
		"hostd.toml": "[server]\nlisten_https = \"127.0.0.1:0\"\n",
		"vhosts.d/t.toml": "server_name = \"t.example\"\nroot = \"../pub\"\nuser = \"" + strconv.Itoa(containUID) +
			"\"\nsandbox = \"thread\"\n[limits]\ncgi_timeout = \"120s\"\n[cgi]\nenabled = true\n[php]\nenabled = true\nworkers = 4\n",
		"pub/hello.php":  `<?php usleep(200000); echo "hello";`,
		"pub/detach.php": `<?php exec("setsid sleep 300 >/dev/null 2>&1 </dev/null &"); echo "started";`,
		"pub/slow.cgi": "#!/bin/sh\n(setsid sleep 301 >/dev/null 2>&1 </dev/null &)\n" +
			"printf 'Content-Type: text/plain\\n\\nstarted\\n'\nexec sleep 302\n",
	})
	for _, p := range []string{"pub", "pub/hello.php", "pub/detach.php", "pub/slow.cgi"} {
		if err := os.Chown(filepath.Join(dir, p), containUID, containUID); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "pub/slow.cgi"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Whatever the code under test leaves behind is the test's to end.
	t.Cleanup(func() {
		for _, pid := range uidProcesses(containUID) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "serve", "--config", filepath.Join(dir, "hostd.toml"))
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{}) // closed once hostd was reaped and its log read
			var logs strings.Builder
			var before []int
			t.Cleanup(func() {
				<-exited
				if t.Failed() {
					t.Logf("before the signal: %d processes %v; left: %v\nhostd log:\n%s", len(before), before, uidProcesses(containUID), logs.String())
				}
			})
			t.Cleanup(func() { cmd.Process.Kill(); <-exited })
			addrc := make(chan string, 1)
			go func() {
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
				cmd.Wait()
				close(exited)
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
			c := &http.Client{Transport: &http.Transport{
				DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, network, addr)
				},
				TLSClientConfig:     &tls.Config{ServerName: "t.example", InsecureSkipVerify: true},
				MaxConnsPerHost:     8,
				MaxIdleConnsPerHost: 8,
			}, Timeout: 60 * time.Second}
			defer c.CloseIdleConnections()
			get := func(path string) (int, string) {
				resp, err := c.Get("https://t.example" + path)
				if err != nil {
					t.Errorf("GET %s: %v", path, err)
					return 0, ""
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}

			// One request starts the pool, then concurrent ones make it
			// start more workers. (Not concurrent from a cold start: one
			// of 4 such requests hangs until its time limit, with or
			// without PID namespaces; php-fpm ondemand's start-up.)
			if code, body := get("/hello.php"); code != 200 || body != "hello" {
				t.Fatalf("hello.php: %d %q", code, body)
			}
			done := make(chan bool, 4)
			for range 4 {
				go func() {
					code, body := get("/hello.php")
					done <- code == 200 && body == "hello"
				}()
			}
			for range 4 {
				if !<-done {
					t.Fatal("hello.php failed")
				}
			}
			if code, body := get("/detach.php"); code != 200 || body != "started" {
				t.Fatalf("detach.php: %d %q", code, body)
			}
			// A CGI request in flight: the script answered "started" and
			// sleeps; its detached daemon runs.
			resp, err := c.Get("https://t.example/slow.cgi")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "started\n" {
				t.Fatalf("slow.cgi: %q %v", line, err)
			}
			sandboxtest.WaitFor(t, "the tenant's master, workers, CGI script and three sleeps", func() bool {
				before = uidProcesses(containUID)
				return len(before) >= 6
			})

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("hostd did not exit after %v", sig)
			}
			sandboxtest.WaitFor(t, "no process of the tenant's uid to be left after hostd's "+sig.String(), func() bool {
				return len(uidProcesses(containUID)) == 0
			})
		})
	}
}
