package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// Test identities: numeric uids with no passwd entry.
const (
	testUID   = 31501
	testGID   = 31501
	testGroup = 31077
)

func newTestSpawner(t testing.TB) *Spawner {
	t.Helper()
	s, err := NewSpawner(nil)
	if err != nil {
		t.Fatalf("NewSpawner: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// statusField returns the value of a "Name:\tvalue" line of /proc/PID/status
// text.
func statusField(t *testing.T, status, name string) string {
	t.Helper()
	for line := range strings.Lines(status) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in status:\n%s", name, status)
	return ""
}

func TestSpawnerCredentials(t *testing.T) {
	sandboxtest.RequireRoot(t)
	s := newTestSpawner(t)
	tests := []struct {
		name       string
		id         *Identity
		uid, gid   string
		groups     string // Groups line of /proc/self/status
		capsZero   bool
		noNewPrivs string
	}{
		{"tenant", &Identity{UID: testUID, GID: testGID}, "31501", "31501", "", true, "1"},
		{"tenant with groups", &Identity{UID: testUID, GID: testGID, Groups: []uint32{testGroup}}, "31501", "31501", "31077", true, "1"},
		{"server identity", nil, "0", "0", "", false, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			cmd := exec.Command("/bin/sh", "-c", "id -u; id -g; cat /proc/self/status")
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := s.Start(t.Context(), cmd, tt.id); err != nil {
				t.Fatalf("Start: %v", err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("Wait: %v (stderr %q)", err, errb.String())
			}
			uid, rest, _ := strings.Cut(out.String(), "\n")
			gid, status, _ := strings.Cut(rest, "\n")
			if uid != tt.uid || gid != tt.gid {
				t.Errorf("id -u, id -g = %s, %s; want %s, %s", uid, gid, tt.uid, tt.gid)
			}
			if want := strings.Repeat(tt.uid+"\t", 4); statusField(t, status, "Uid")+"\t" != want {
				t.Errorf("Uid line %q: want real, effective, saved and fs uid %s", statusField(t, status, "Uid"), tt.uid)
			}
			if tt.id != nil {
				if g := statusField(t, status, "Groups"); g != tt.groups {
					t.Errorf("Groups = %q, want %q (server groups must be dropped)", g, tt.groups)
				}
			}
			for _, f := range []string{"CapEff", "CapPrm", "CapAmb"} {
				v := statusField(t, status, f)
				if isZero := strings.Trim(v, "0") == ""; isZero != tt.capsZero && !(f == "CapAmb" && isZero) {
					t.Errorf("%s = %s, want zero=%v", f, v, tt.capsZero)
				}
			}
			if v := statusField(t, status, "NoNewPrivs"); v != tt.noNewPrivs {
				t.Errorf("NoNewPrivs = %s, want %s", v, tt.noNewPrivs)
			}
			if cmd.SysProcAttr == nil || !cmd.SysProcAttr.Setsid || cmd.SysProcAttr.Pdeathsig != syscall.SIGKILL {
				t.Errorf("SysProcAttr = %+v: want Setsid and Pdeathsig SIGKILL", cmd.SysProcAttr)
			}
		})
	}
}

// childStat starts /bin/cat /proc/self/stat as the test tenant with attr
// and returns the child's stat line, its fields after "(comm) " (state ppid
// pgrp session ...) and its pid.
func childStat(t *testing.T, attr *syscall.SysProcAttr) (stat string, f []string, pid string) {
	t.Helper()
	s := newTestSpawner(t)
	var out bytes.Buffer
	cmd := exec.Command("/bin/cat", "/proc/self/stat")
	cmd.SysProcAttr = attr
	cmd.Stdout = &out
	if err := s.Start(t.Context(), cmd, &Identity{UID: testUID, GID: testGID}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	_, rest, _ := strings.Cut(out.String(), ") ")
	return out.String(), strings.Fields(rest), strconv.Itoa(cmd.Process.Pid)
}

// TestSpawnerOwnProcessGroup: every child leads its own session, so its own
// process group, and cannot join the server's (setpgid works only within a
// session).
func TestSpawnerOwnProcessGroup(t *testing.T) {
	sandboxtest.RequireRoot(t)
	stat, f, pid := childStat(t, nil)
	if len(f) < 4 || f[2] != pid || f[3] != pid {
		t.Fatalf("child stat %q: want pgrp == session == pid %s", stat, pid)
	}
}

func TestSpawnerSetsid(t *testing.T) {
	sandboxtest.RequireRoot(t)
	stat, f, pid := childStat(t, &syscall.SysProcAttr{Setsid: true, Setpgid: true, Pgid: 1})
	if len(f) < 4 || f[2] != pid || f[3] != pid {
		t.Fatalf("child stat %q: want pgrp == session == pid %s", stat, pid)
	}
}

func TestSpawnerNoLeakedFDs(t *testing.T) {
	sandboxtest.RequireRoot(t)
	s := newTestSpawner(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("server secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()

	for _, id := range []*Identity{nil, {UID: testUID, GID: testGID}} {
		t.Run(fmt.Sprintf("identity=%v", id != nil), func(t *testing.T) {
			var out, errb bytes.Buffer
			cmd := exec.Command("/usr/bin/find", "/proc/self/fd/", "-mindepth", "1", "-maxdepth", "1", "-printf", "%f %l\n")
			cmd.Dir = "/"
			cmd.Env = []string{}
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := s.Start(t.Context(), cmd, id); err != nil {
				t.Fatalf("Start: %v", err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("Wait: %v (stderr %q)", err, errb.String())
			}
			var fds []int
			for line := range strings.Lines(out.String()) {
				num, target, _ := strings.Cut(strings.TrimSpace(line), " ")
				n, err := strconv.Atoi(num)
				if err != nil {
					t.Fatalf("bad line %q", line)
				}
				fds = append(fds, n)
				switch {
				case n <= 2:
					// stdin is /dev/null, stdout and stderr are pipes.
				case strings.HasPrefix(target, "/proc/") || target == "/":
					// find's own directory descriptors.
				default:
					t.Errorf("child has fd %d -> %s, a descriptor it did not open", n, target)
				}
				if target == secret || strings.HasPrefix(target, "socket:") || strings.HasPrefix(target, "anon_inode:") {
					t.Errorf("leaked fd %d -> %s", n, target)
				}
			}
			if !slices.Contains(fds, 0) || !slices.Contains(fds, 1) || !slices.Contains(fds, 2) {
				t.Errorf("fds %v: want 0, 1 and 2 (output %q)", fds, out.String())
			}
		})
	}
}

// groupAlive reports whether any process of group pgid is alive (zombies,
// which may wait for a parent that does not reap, do not count).
func groupAlive(t testing.TB, pgid int) bool {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

func TestSpawnerCancelKillsGroup(t *testing.T) {
	sandboxtest.RequireRoot(t)
	s := newTestSpawner(t)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	// The shell starts a background grandchild, reports its pid, then
	// sleeps itself: killing only the shell would leave the grandchild.
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", "sleep 100 & echo $!; exec sleep 100")
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.Start(t.Context(), cmd, &Identity{UID: testUID, GID: testGID}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	pgid := cmd.Process.Pid
	var line [32]byte
	n, _ := stdout.Read(line[:])
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(line[:n])))
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", line[:n], err)
	}
	if !groupAlive(t, pgid) {
		t.Fatalf("group %d not alive before the deadline", pgid)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL || ctx.Err() == nil {
		t.Errorf("Wait = %v (ctx %v), want killed by SIGKILL at the deadline", err, ctx.Err())
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("Wait took %v: the grandchild kept the pipe open", d)
	}
	// The grandchild was reparented; give its new parent a moment.
	deadline := time.Now().Add(2 * time.Second)
	for groupAlive(t, pgid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if groupAlive(t, pgid) {
		t.Errorf("process group %d (grandchild %d) still alive after the deadline", pgid, grandchild)
	}
}

func TestSpawnerCloseKillsChildren(t *testing.T) {
	sandboxtest.RequireRoot(t)
	s, err := NewSpawner(nil)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sleep", "100")
	if err := s.Start(t.Context(), cmd, &Identity{UID: testUID, GID: testGID}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	s.Close()
	s.Close() // idempotent
	if err, ok := waitFor(cmd, 5*time.Second); !ok {
		t.Fatal("child survived the spawner thread")
	} else if !killedBy(err, syscall.SIGKILL) {
		t.Errorf("Wait = %v, want killed by SIGKILL (parent-death signal)", err)
	}
	if err := s.Start(t.Context(), exec.Command("/bin/true"), nil); !errors.Is(err, ErrSpawnerClosed) {
		t.Errorf("Start after Close = %v, want ErrSpawnerClosed", err)
	}
}

func TestSpawnerRefusals(t *testing.T) {
	sandboxtest.RequireRoot(t)
	s := newTestSpawner(t)
	tests := []struct {
		name string
		id   *Identity
		cmd  func() *exec.Cmd
	}{
		{"root uid", &Identity{UID: 0, GID: testGID}, func() *exec.Cmd { return exec.Command("/bin/true") }},
		{"root gid", &Identity{UID: testUID, GID: 0}, func() *exec.Cmd { return exec.Command("/bin/true") }},
		{"root group", &Identity{UID: testUID, GID: testGID, Groups: []uint32{0}}, func() *exec.Cmd { return exec.Command("/bin/true") }},
		{"missing program", nil, func() *exec.Cmd { return exec.Command("/nonexistent/prog") }},
		{"started twice", nil, func() *exec.Cmd {
			c := exec.Command("/bin/true")
			if err := s.Start(t.Context(), c, nil); err != nil {
				t.Fatal(err)
			}
			_ = c.Wait()
			return c
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := tt.cmd()
			if err := s.Start(t.Context(), cmd, tt.id); err == nil {
				_ = cmd.Wait()
				t.Fatal("Start succeeded, want an error")
			} else if !strings.HasPrefix(err.Error(), "sandbox: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
	// A tenant cannot execute a program only root may run.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "rootonly")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho ran\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prog)
	if err := s.Start(t.Context(), cmd, &Identity{UID: testUID, GID: testGID}); !errors.Is(err, os.ErrPermission) {
		if err == nil {
			_ = cmd.Wait()
		}
		t.Errorf("Start of a 0700 root program as a tenant = %v, want permission denied", err)
	}
}

func TestSpawnerConcurrent(t *testing.T) {
	sandboxtest.RequireRoot(t)
	s := newTestSpawner(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			uid := uint32(testUID + i%4)
			var out bytes.Buffer
			cmd := exec.Command("/usr/bin/id", "-u")
			cmd.Stdout = &out
			if err := s.Start(context.Background(), cmd, &Identity{UID: uid, GID: uid}); err != nil {
				errs <- err
				return
			}
			if err := cmd.Wait(); err != nil {
				errs <- err
				return
			}
			if got := strings.TrimSpace(out.String()); got != strconv.Itoa(int(uid)) {
				errs <- fmt.Errorf("id -u = %s, want %d", got, uid)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSpawnerStartContextDone(t *testing.T) {
	sandboxtest.RequireRoot(t)
	s := newTestSpawner(t)
	// Occupy the spawner thread? Not possible from outside; instead check
	// that a cancelled context never starts a process: either the hand-off
	// is abandoned or exec.Cmd.Start sees the cancelled context.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	cmd := exec.CommandContext(ctx, "/bin/true")
	if err := s.Start(ctx, cmd, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a cancelled context = %v, want context.Canceled", err)
	}
	if cmd.Process != nil {
		t.Errorf("process started despite the cancelled context")
	}
}

func BenchmarkSpawnerStart(b *testing.B) {
	sandboxtest.RequireRoot(b)
	s := newTestSpawner(b)
	for _, bc := range []struct {
		name string
		id   *Identity
	}{
		{"server", nil},
		{"tenant", &Identity{UID: testUID, GID: testGID}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				if err := s.Start(b.Context(), cmd, bc.id); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSpawnerLimits: the limits are in force from the child's first
// instruction, for a tenant (all four) and for the server's identity (all
// but the process count, which would count the server's threads).
func TestSpawnerLimits(t *testing.T) {
	sandboxtest.RequireRoot(t)
	s := newTestSpawner(t)
	if c := s.Containment(); !c.Rlimits || !c.Subreaper {
		t.Fatalf("Containment = %+v, want rlimits and subreaper", c)
	}
	lim := Limits{CPU: 6500 * time.Millisecond, Memory: 1 << 30, Processes: 50, OpenFiles: 100}
	for _, id := range []*Identity{{UID: testUID, GID: testGID}, nil} {
		var out bytes.Buffer
		cmd := exec.Command("/bin/cat", "/proc/self/limits")
		cmd.Stdout = &out
		if err := s.StartLimited(t.Context(), cmd, id, lim); err != nil {
			t.Fatalf("StartLimited: %v", err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		s.Finished(cmd, lim)
		want := map[string]string{"Max cpu time": "7", "Max data size": "1073741824", "Max open files": "100", "Max processes": "50"}
		if id == nil {
			delete(want, "Max processes")
		}
		for _, line := range strings.Split(out.String(), "\n") {
			for name, v := range want {
				if strings.HasPrefix(line, name+" ") {
					if f := strings.Fields(strings.TrimPrefix(line, name)); len(f) < 2 || f[0] != v || f[1] != v {
						t.Errorf("identity %v: %q, want soft and hard %s", id, line, v)
					}
					delete(want, name)
				}
			}
		}
		if len(want) > 0 {
			t.Errorf("identity %v: limits %v not found in\n%s", id, want, out.String())
		}
	}
}

// TestSpawnerPIDNamespace: a child is PID 1 of its own PID namespace, and
// what it started (a setsid daemon, a double fork, a plain background job),
// all running while it runs, dies when it exits: without Finished, without
// a sweep (OrphanGrace is an hour). php-fpm's way of stopping (a handled
// SIGTERM from the server) reaches PID 1 too.
func TestSpawnerPIDNamespace(t *testing.T) {
	sandboxtest.RequireRoot(t)
	s := newTestSpawner(t)
	if c := s.Containment(); !c.PIDNamespace {
		t.Fatalf("Containment = %+v, want PIDNamespace (root may create PID namespaces)", c)
	}
	lim := Limits{OrphanGrace: time.Hour}
	for _, exit := range []string{"exit", "sigterm"} {
		t.Run(exit, func(t *testing.T) {
			// The script reports its pid, starts three sleeps that leave
			// its tree in three ways, then waits for stdin to close (exit)
			// or for a SIGTERM it handles (sigterm).
			script := `echo $$
setsid sleep 600 >/dev/null 2>&1 </dev/null &
(setsid sleep 601 >/dev/null 2>&1 </dev/null &)
(sleep 602 >/dev/null 2>&1 </dev/null &)
echo started
`
			if exit == "sigterm" {
				// The handler before "started": PID 1 of a namespace drops
				// a signal it has no handler for, so a SIGTERM sent before
				// the trap ran would be lost and the script run for ever.
				script = "trap 'exit 0' TERM\n" + script + "while :; do sleep 0.05; done\n"
			} else {
				script += "cat >/dev/null\n"
			}
			cmd := exec.Command("/bin/sh", "-c", script)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := s.StartLimited(t.Context(), cmd, &Identity{UID: testUID, GID: testGID}, lim); err != nil {
				t.Fatalf("StartLimited: %v", err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			var out [64]byte
			n, _ := io.ReadAtLeast(stdout, out[:], len("1\nstarted\n"))
			if got := string(out[:n]); got != "1\nstarted\n" {
				t.Fatalf("script printed %q, want its pid 1, then started", got)
			}
			ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", cmd.Process.Pid))
			if err != nil {
				t.Fatal(err)
			}
			if self, _ := os.Readlink("/proc/self/ns/pid"); self == ns {
				t.Fatalf("the child is in the server's PID namespace %s", ns)
			}
			var sleeps []string
			sandboxtest.WaitFor(t, "the three sleeps to run in the child's namespace", func() bool {
				sleeps = sleepsIn(ns)
				return len(sleeps) == 3
			})
			if exit == "sigterm" {
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			} else {
				stdin.Close()
			}
			if err, ok := waitFor(cmd, 30*time.Second); !ok {
				t.Fatalf("the child did not exit on %s within 30s", exit)
			} else if err != nil {
				t.Fatalf("Wait: %v, want exit 0", err)
			}
			for _, pid := range sleeps {
				sandboxtest.WaitFor(t, "sleep "+pid+" to die with PID 1 of its namespace", func() bool { return !sleeping(pid) })
			}
			s.Finished(cmd, lim)
		})
	}
}

// TestSpawnerPIDNamespaceCPULimit: the kernel's SIGKILL at RLIMIT_CPU
// reaches a child that is PID 1 of its namespace (which ignores signals it
// has no handler for, unless the kernel forces them).
func TestSpawnerPIDNamespaceCPULimit(t *testing.T) {
	sandboxtest.RequireRoot(t)
	s := newTestSpawner(t)
	lim := Limits{CPU: time.Second}
	cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
	if err := s.StartLimited(t.Context(), cmd, &Identity{UID: testUID, GID: testGID}, lim); err != nil {
		t.Fatalf("StartLimited: %v", err)
	}
	if err, ok := waitFor(cmd, 60*time.Second); !ok {
		t.Fatal("a busy loop outlived its 1s CPU limit by a minute")
	} else if !killedBy(err, syscall.SIGKILL) {
		t.Errorf("Wait = %v, want killed by SIGKILL at the CPU limit", err)
	}
	s.Finished(cmd, lim)
}

// sleepsIn returns the pids (in the test's namespace) of the test
// tenant's live sleeps in the PID namespace ns.
func sleepsIn(ns string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && l == ns && sleeping(e.Name()) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestSpawnerOrphans: with Limits.Background (the child shares the
// server's PID namespace, as everywhere the kernel refuses one), a daemon
// started with setsid and a double-forked child outlive the script that
// started them only by the grace.
func TestSpawnerOrphans(t *testing.T) {
	sandboxtest.RequireRoot(t)
	s := newTestSpawner(t)
	var out bytes.Buffer
	// The sleeps' stdio goes to /dev/null: an orphan holding the stdout
	// pipe would keep Wait waiting (the CGI handler closes its end).
	cmd := exec.Command("/bin/sh", "-c", `
setsid sleep 600 >/dev/null 2>&1 </dev/null & echo $!
(setsid sleep 601 >/dev/null 2>&1 </dev/null & echo $!)
(sleep 602 >/dev/null 2>&1 </dev/null & echo $!)`)
	cmd.Stdout = &out
	lim := Limits{OrphanGrace: 200 * time.Millisecond, Background: true}
	if err := s.StartLimited(t.Context(), cmd, &Identity{UID: testUID, GID: testGID}, lim); err != nil {
		t.Fatalf("StartLimited: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	pids := strings.Fields(out.String())
	if len(pids) != 3 {
		t.Fatalf("script printed %q, want 3 pids", out.String())
	}
	for _, pid := range pids[:2] {
		// The background job may not have exec'd sleep yet.
		sandboxtest.WaitFor(t, "orphan "+pid+" to run after the script exited", func() bool { return sleeping(pid) })
	}
	s.Finished(cmd, lim)
	for _, pid := range pids {
		sandboxtest.WaitFor(t, fmt.Sprintf("orphan %s to end after the script (grace %v)", pid, lim.OrphanGrace), func() bool { return !sleeping(pid) })
	}
}

// sleeping reports whether pid is a live (not zombie) sleep of the test
// tenant.
func sleeping(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return false
	}
	st := string(b)
	return strings.Contains(st, "Name:\tsleep") && !strings.Contains(st, "(zombie)") &&
		strings.Contains(st, "Uid:\t"+strconv.Itoa(testUID)+"\t")
}

// waitFor waits up to d for cmd to end and returns Wait's error; when it
// has not ended by then (ok false), it is killed and reaped.
func waitFor(cmd *exec.Cmd, d time.Duration) (err error, ok bool) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err, true
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return nil, false
	}
}

// killedBy reports whether err is Wait's error for a process killed by sig.
func killedBy(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == sig
}
