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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// servingBinary builds hostd, writes a two-file configuration into dir
// and runs `hostd serve` until the test ends. It returns the binary, the
// main file, the HTTPS address and the server's pid.
func servingBinary(t *testing.T, dir string) (bin, config, addr string, pid int) {
	t.Helper()
	bin = filepath.Join(dir, "hostd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for name, body := range map[string]string{
		"hostd.toml":          "[server]\nlisten_https = \"127.0.0.1:0\"\naccess_log = \"logs/access.log\"\n",
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../pub\"\n",
		"pub/index.html":      "hello\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config = filepath.Join(dir, "hostd.toml")
	cmd := exec.Command(bin, "serve", "--config", config)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if l := sc.Text(); strings.Contains(l, "msg=serving") {
				for _, f := range strings.Fields(l) {
					if a, ok := strings.CutPrefix(f, "https="); ok {
						addrc <- a
					}
				}
			}
		}
		close(addrc)
	}()
	select {
	case addr = <-addrc:
		if addr == "" {
			t.Fatal("hostd serve exited before serving")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("hostd serve did not start")
	}
	return bin, config, addr, cmd.Process.Pid
}

func httpsGet(t *testing.T, addr, sni, path string) int {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		TLSClientConfig: &tls.Config{ServerName: sni, InsecureSkipVerify: true},
	}, Timeout: 10 * time.Second}
	resp, err := c.Get("https://" + sni + path)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestAdminCommands drives a real `hostd serve` with `hostd status`,
// `hostd reload`, `hostd trace`, SIGHUP and SIGUSR1.
func TestAdminCommands(t *testing.T) {
	sandboxtest.RequireRoot(t)
	dir := t.TempDir()
	bin, config, addr, pid := servingBinary(t, dir)
	hostd := func(args ...string) (int, string, string) { return hostdCmd(t, bin, "", args...) }
	if code := httpsGet(t, addr, "alice.example", "/"); code != 200 {
		t.Fatalf("alice: %d", code)
	}

	// trace: a live line for the next request.
	tr := exec.Command(bin, "trace", "--config", config, "--vhost", "alice.example")
	trOut, _ := tr.StdoutPipe()
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { tr.Process.Signal(syscall.SIGINT); tr.Wait() }()
	sc := bufio.NewScanner(trOut)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "# tracing") {
		t.Fatalf("trace header %q", sc.Text())
	}
	httpsGet(t, addr, "alice.example", "/index.html")
	if !sc.Scan() || !strings.Contains(sc.Text(), " alice.example uid=0 tid=") || !strings.Contains(sc.Text(), " GET /index.html 200 6B ") {
		t.Errorf("trace line %q", sc.Text())
	}

	// status
	code, out, errOut := hostd("status", "--config", config)
	if code != 0 || !strings.Contains(out, "generation 1") || !strings.Contains(out, "alice.example") {
		t.Errorf("status: %d\n%s%s", code, out, errOut)
	}

	// reload with a broken new file: applied without it (exit 3), its
	// errors printed with file:line:col, alice still served.
	bob := filepath.Join(dir, "vhosts.d", "bob.toml")
	os.WriteFile(bob, []byte("server_name = \"bob.example\"\nroot = \"../pub\"\nsandbx = \"none\"\n"), 0o644)
	code, out, errOut = hostd("reload", "--config", config)
	if code != 3 || !strings.Contains(out, "not added bob.example ("+bob+"): error:\n    "+bob+":3:1: unknown key \"sandbx\"") ||
		!strings.Contains(out, "reloaded in part: generation 2, 1 unchanged, 0 added, 0 changed, 0 removed, 0 kept with errors, 1 not added") {
		t.Errorf("reload of a broken file: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if code := httpsGet(t, addr, "alice.example", "/"); code != 200 {
		t.Errorf("alice after a partial reload: %d", code)
	}
	// a [server] change: reload says which keys need a restart.
	mainSrc, _ := os.ReadFile(config)
	os.WriteFile(config, append(mainSrc, "read_timeout = \"30s\"\n"...), 0o644)
	code, out, _ = hostd("reload", "--config", config)
	if code != 3 || !strings.Contains(out, "warning: [server] read_timeout changed in "+config+": only vhosts are reloaded, restart hostd to apply them") {
		t.Errorf("reload after a [server] change: exit %d\n%s", code, out)
	}
	os.WriteFile(config, mainSrc, 0o644)

	// fixed, reloaded by SIGHUP: bob is served.
	os.WriteFile(bob, []byte("server_name = \"bob.example\"\nroot = \"../pub\"\n"), 0o644)
	syscall.Kill(pid, syscall.SIGHUP)
	sandboxtest.WaitFor(t, "bob served after SIGHUP", func() bool { return httpsGet(t, addr, "bob.example", "/") == 200 })
	code, out, _ = hostd("reload", "--config", config)
	if code != 0 || !strings.Contains(out, "reloaded: generation 5, 2 unchanged") {
		t.Errorf("reload: %d %q", code, out)
	}

	// SIGUSR1 reopens the access log after logrotate moved it.
	logs := filepath.Join(dir, "logs")
	if err := os.Rename(filepath.Join(logs, "access.log"), filepath.Join(logs, "access.log.1")); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(pid, syscall.SIGUSR1)
	sandboxtest.WaitFor(t, "access.log reopened", func() bool {
		_, err := os.Stat(filepath.Join(logs, "access.log"))
		return err == nil
	})
	httpsGet(t, addr, "alice.example", "/after-rotate")
	sandboxtest.WaitFor(t, "the new access.log gets the next request", func() bool {
		b, _ := os.ReadFile(filepath.Join(logs, "access.log"))
		return strings.Contains(string(b), "/after-rotate")
	})
	if b, _ := os.ReadFile(filepath.Join(logs, "access.log.1")); strings.Contains(string(b), "/after-rotate") {
		t.Error("the rotated file still receives lines")
	}

	// hostd reopen-logs does the same over the admin socket (logrotate).
	if err := os.Rename(filepath.Join(logs, "access.log"), filepath.Join(logs, "access.log.2")); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := hostd("reopen-logs", "--config", config); code != 0 {
		t.Fatalf("reopen-logs: %d %s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(logs, "access.log")); err != nil {
		t.Errorf("access.log not reopened: %v", err)
	}
	httpsGet(t, addr, "alice.example", "/after-reopen")
	sandboxtest.WaitFor(t, "the reopened access.log gets the next request", func() bool {
		b, _ := os.ReadFile(filepath.Join(logs, "access.log"))
		return strings.Contains(string(b), "/after-reopen")
	})

	// Without a server: every admin command says so, naming the socket.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "hostd.toml"), []byte("[server]\nlisten_https = \"127.0.0.1:0\"\n"), 0o644)
	for _, c := range []string{"status", "reload", "trace", "reopen-logs"} {
		code, _, errOut := hostd(c, "--config", filepath.Join(other, "hostd.toml"))
		want := "hostd " + c + ": no server is running on " + filepath.Join(other, "state", "admin.sock") + "\n"
		if code != 1 || errOut != want {
			t.Errorf("%s without a server: exit %d %q, want %q", c, code, errOut, want)
		}
	}

	// The log-symlink attack: the log directory became a tenant's (an
	// operator's mistake), the tenant swaps the log for a symbolic link to
	// a file in a directory only root can write, and logrotate sends
	// SIGUSR1. The root-owned server must create or write nothing there.
	secret := filepath.Join(dir, "secret")
	os.Mkdir(secret, 0o700)
	for p := dir; p != "/"; p = filepath.Dir(p) { // let the tenant reach logs/
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 {
			os.Chmod(p, fi.Mode().Perm()|0o111)
		}
	}
	if err := os.Chown(logs, 31001, 31001); err != nil {
		t.Fatal(err)
	}
	attack := exec.Command("/bin/sh", "-c", "mv access.log access.log.2 && ln -s ../secret/cron access.log")
	attack.Dir = logs
	attack.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 31001, Gid: 31001}}
	if out, err := attack.CombinedOutput(); err != nil {
		t.Fatalf("the tenant's swap: %v %s", err, out)
	}
	syscall.Kill(pid, syscall.SIGUSR1)
	httpsGet(t, addr, "alice.example", "/after-attack")
	sandboxtest.WaitFor(t, "the request after the refused reopen is logged to the file already open", func() bool {
		b, _ := os.ReadFile(filepath.Join(logs, "access.log.2"))
		return strings.Contains(string(b), "/after-attack")
	})
	if _, err := os.Lstat(filepath.Join(secret, "cron")); err == nil {
		t.Fatal("SIGUSR1 made the server create the symlink's target")
	}
	if fi, err := os.Lstat(filepath.Join(logs, "access.log")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("access.log: %v %v, want the tenant's symlink left alone", fi, err)
	}
}
