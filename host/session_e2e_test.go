package host_test

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/host/session/sessiontest"
)

// buildHostd builds the hostd binary into a test directory.
func buildHostd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hostd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/hostd")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// node is a hostd process serving one configuration.
type node struct {
	addr string
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{}
}

// startNode runs `hostd serve --config` on a free loopback port with the
// shared vhosts in dir/vhosts.d, the shared session secrets in
// dir/session.keys and sessions, the main file's table.
func startNode(t *testing.T, bin, dir, name, sessions string) *node {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	main := fmt.Sprintf("[server]\nlisten_https = %q\nvhosts = \"../vhosts.d/*.toml\"\nstate_dir = \"state\"\n"+
		"session_keys = \"../session.keys\"\n\n%s", addr, sessions)
	hosttest.Write(t, dir, hosttest.Files{name + "/hostd.toml": main})
	n := &node{addr: addr, done: make(chan struct{})}
	n.cmd = exec.Command(bin, "serve", "--config", filepath.Join(dir, name, "hostd.toml"))
	n.cmd.Stdout, n.cmd.Stderr = &n.out, &n.out
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { n.cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		n.kill()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, n.out.String())
		}
	})
	if err := sessiontest.WaitPort(addr, 10*time.Second); err != nil {
		n.kill()
		t.Fatalf("%s: %v\n%s", name, err, n.out.String())
	}
	return n
}

// kill sends SIGKILL to the node's process (by PID) and waits for it.
func (n *node) kill() {
	if n.cmd.Process != nil {
		n.cmd.Process.Signal(syscall.SIGKILL)
		<-n.done
	}
}

// testFailover logs in on node A, kills A with SIGKILL (and runs
// afterKill), and checks that node B still knows the user.
func testFailover(t *testing.T, sessions string, afterKill func()) {
	if testing.Short() {
		t.Skip("builds and runs hostd processes")
	}
	bin := buildHostd(t)
	dir := t.TempDir()
	hosttest.Write(t, dir, hosttest.Files{
		"vhosts.d/app.toml": sessionVHost("app.example", ""),
		"pub/":              "",
		"hooks/session.lua": sessionHook,
	})
	a := startNode(t, bin, dir, "a", sessions)
	b := startNode(t, bin, dir, "b", sessions)
	ca := hosttest.ClientTo(a.addr, hosttest.TLSConfig("app.example"), false)
	cb := hosttest.ClientTo(b.addr, hosttest.TLSConfig("app.example"), false)
	ck := sessionCookie(t, getWithCookie(t, ca, "https://app.example/login?user=ann", ""))
	if got := getWithCookie(t, ca, "https://app.example/", ck).Body; got != "user=ann" {
		t.Fatalf("node a after login: %q", got)
	}
	a.kill()
	if afterKill != nil {
		afterKill()
	}
	if got := getWithCookie(t, cb, "https://app.example/", ck).Body; got != "user=ann" {
		t.Fatalf("node b after node a died: %q", got)
	}
	// The session goes on on B.
	ck2 := sessionCookie(t, getWithCookie(t, cb, "https://app.example/login?user=bob", ck))
	if got := getWithCookie(t, cb, "https://app.example/", ck2).Body; got != "user=bob" {
		t.Fatalf("node b after a second login: %q", got)
	}
}

func TestSessionFailoverRedis(t *testing.T) {
	rd := sessiontest.Redis(t)
	testFailover(t, fmt.Sprintf("[sessions]\nstore = \"redis\"\nurl = \"redis://%s/0\"\n", rd.Addr), nil)
}

func TestSessionFailoverMemcached(t *testing.T) {
	p, bk := sessiontest.Memcached(t), sessiontest.Memcached(t)
	testFailover(t, fmt.Sprintf("[sessions]\nstore = \"memcached\"\nservers = [%s]\nbackup = [%s]\n",
		strconv.Quote(p.Addr), strconv.Quote(bk.Addr)), p.Kill)
}
