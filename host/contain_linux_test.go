package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// Uids of the containment tests, used by no other test: they count every
// process of their uid on the machine.
const (
	containCGIUID = 31043 // CGI, contained (the default)
	backgroundUID = 31044 // CGI with cgi_background = true
	containPHPUID = 31045 // a php-fpm pool
)

// sleepsOf returns the live processes named sleep of uid.
func sleepsOf(uid int) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !aliveAs(e.Name(), uid) {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/comm"); err == nil && string(b) == "sleep\n" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killAllOf SIGKILLs, by pid, the processes of uid: the test's own
// leftovers when the code under test failed to end them.
func killAllOf(uid int) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && aliveAs(e.Name(), uid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// detachScript starts three sleeps that leave the script's process tree
// in three ways (a setsid daemon, a double-forked setsid daemon, a double
// fork), waits until all three run, then answers with how many it saw.
// (pgrep, not ps: procps' ps reads /proc/<getpid()>, which in a PID
// namespace without a /proc of its own names another process or none.)
const detachScript = `
setsid sleep 300 >/dev/null 2>&1 </dev/null &
(setsid sleep 301 >/dev/null 2>&1 </dev/null &)
(sleep 302 >/dev/null 2>&1 </dev/null &)
n() { pgrep -c -u "$(id -u)" -x sleep; }
i=0
while [ "$(n)" -lt 3 ] && [ $i -lt 300 ]; do sleep 0.02; i=$((i+1)); done
printf 'Content-Type: text/plain\n\n'
n
`

// TestCGIDetachedDiesWithScript: what a CGI script detaches (setsid,
// double fork) is gone once its response is complete, though cgi_grace
// is an hour: the script was PID 1 of its own PID namespace. With
// cgi_background = true those that left the script's process group outlive
// the script, until cgi_grace after the request.
func TestCGIDetachedDiesWithScript(t *testing.T) {
	requireRoot(t)
	dir := tenantDir(t)
	files := hosttest.Files{
		"hostd.toml": hosttest.MainConfig,
		"vhosts.d/contained.toml": "server_name = \"contained.example\"\nroot = \"../contained\"\nuser = \"" + strconv.Itoa(containCGIUID) +
			"\"\nsandbox = \"thread\"\n[limits]\ncgi_grace = \"1h\"\n[cgi]\nenabled = true\n",
		"vhosts.d/bg.toml": "server_name = \"bg.example\"\nroot = \"../bg\"\nuser = \"" + strconv.Itoa(backgroundUID) +
			"\"\nsandbox = \"thread\"\n[limits]\ncgi_grace = \"3s\"\ncgi_background = true\n[cgi]\nenabled = true\n",
		"contained/detach.cgi": "#!/bin/sh\n" + detachScript,
		"bg/detach.cgi":        "#!/bin/sh\n" + detachScript,
	}
	hosttest.Write(t, dir, files)
	chown(t, dir, containCGIUID, 0o755, "contained", "contained/detach.cgi")
	chown(t, dir, backgroundUID, 0o755, "bg", "bg/detach.cgi")
	t.Cleanup(func() { killAllOf(containCGIUID); killAllOf(backgroundUID) })
	s := hosttest.StartDir(t, dir)

	r := hosttest.Get(t, s.Client("contained.example", false), "https://contained.example/detach.cgi")
	if r.StatusCode != 200 || r.Body != "3\n" {
		t.Fatalf("contained detach.cgi: %d %q, want the 3 sleeps it started running", r.StatusCode, r.Body)
	}
	sandboxtest.WaitFor(t, "the processes the script detached to die with it (cgi_grace is 1h)", func() bool {
		return processesOf(containCGIUID) == 0
	})

	r = hosttest.Get(t, s.Client("bg.example", false), "https://bg.example/detach.cgi")
	if r.StatusCode != 200 || r.Body != "3\n" {
		t.Fatalf("bg detach.cgi: %d %q", r.StatusCode, r.Body)
	}
	// The double fork without setsid stays in the script's process group,
	// killed at the end of the request; the two setsid ones outlive it.
	sandboxtest.WaitFor(t, "cgi_background: the 2 sleeps that left the script's process group to outlive it", func() bool {
		return len(sleepsOf(backgroundUID)) == 2
	})
	sandboxtest.WaitFor(t, "cgi_background: the detached processes to go cgi_grace (3s) after the request", func() bool {
		return processesOf(backgroundUID) == 0
	})
}

// TestPHPDetachedDiesWithPool: a process a PHP script detaches (setsid,
// background) lives while its pool does, and is gone when a reload that
// removes the vhost stops the pool. The master is PID 1 of its PID
// namespace.
func TestPHPDetachedDiesWithPool(t *testing.T) {
	requirePHPFPM(t)
	dir := tenantDir(t)
	hosttest.Write(t, dir, hosttest.Files{
		"hostd.toml": hosttest.MainConfig,
		"vhosts.d/p.toml": "server_name = \"p.example\"\nroot = \"../p\"\nuser = \"" + strconv.Itoa(containPHPUID) +
			"\"\nsandbox = \"thread\"\n[php]\nenabled = true\nworkers = 2\n",
		"vhosts.d/other.toml": "server_name = \"other.example\"\nroot = \"../other\"\n",
		"other/index.html":    "other\n",
		"p/detach.php": `<?php exec("setsid sleep 300 >/dev/null 2>&1 </dev/null &");
exec("(sleep 301 >/dev/null 2>&1 </dev/null &)");
echo "started";`,
	})
	chownTree(t, filepath.Join(dir, "p"), containPHPUID)
	t.Cleanup(func() { killAllOf(containPHPUID) })
	s := hosttest.StartDir(t, dir)

	if r := hosttest.Get(t, s.Client("p.example", false), "https://p.example/detach.php"); r.StatusCode != 200 || r.Body != "started" {
		t.Fatalf("detach.php: %d %q", r.StatusCode, r.Body)
	}
	sandboxtest.WaitFor(t, "the two sleeps PHP detached to run", func() bool { return len(sleepsOf(containPHPUID)) == 2 })
	master := phpStatus(t, s, "p.example").PID
	if ns := procStatus(t, master)["NSpid"]; ns != strconv.Itoa(master)+" 1" {
		t.Errorf("php-fpm master NSpid = %q, want %d 1 (PID 1 of its own namespace)", ns, master)
	}
	for _, pid := range sleepsOf(containPHPUID) {
		if f := strings.Fields(procStatus(t, pid)["NSpid"]); len(f) != 2 {
			t.Errorf("sleep %d: NSpid %v, want it in the pool's namespace", pid, f)
		}
	}
	if err := os.Remove(filepath.Join(dir, "vhosts.d/p.toml")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	sandboxtest.WaitFor(t, "every process of the removed vhost's uid to end with its pool", func() bool {
		return processesOf(containPHPUID) == 0
	})
}
