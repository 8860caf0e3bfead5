//go:build linux

package sandbox_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// identity is a test tenant; the uids have no passwd entry on purpose.
type identity struct{ uid, gid uint32 }

func (i identity) sandbox() sandbox.Identity { return sandbox.Identity{UID: i.uid, GID: i.gid} }

var (
	tenantA = identity{31001, 31001}
	tenantB = identity{31002, 31002}
)

var switchingModes = []sandbox.Mode{sandbox.ModeThread, sandbox.ModeThreadPerRequest, sandbox.ModeInline}

// openTempDir returns a t.TempDir that every uid can traverse.
func openTempDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, p := range []string{d, filepath.Dir(d)} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// fixture is a directory tree owned by tenants A, B and root:
//
//	shared/ (root 0755): a.txt (A 0600), b.txt (B 0600)
//	a/ (A 0700): secret (A 0600), link -> ../shared/b.txt
//	b/ (B 0700): secret (B 0600)
//	root/ (root 0755)
type fixture struct {
	base, aShared, bShared, aSecret, bSecret, aLink, rootDir string
}

func fixtureAt(base string) fixture {
	return fixture{
		base:    base,
		aShared: filepath.Join(base, "shared", "a.txt"),
		bShared: filepath.Join(base, "shared", "b.txt"),
		aSecret: filepath.Join(base, "a", "secret"),
		bSecret: filepath.Join(base, "b", "secret"),
		aLink:   filepath.Join(base, "a", "link"),
		rootDir: filepath.Join(base, "root"),
	}
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	fx := fixtureAt(openTempDir(t))
	mkdir := func(p string, mode os.FileMode, id identity) {
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, int(id.uid), int(id.gid)); err != nil {
			t.Fatal(err)
		}
	}
	file := func(p string, id identity) {
		if err := os.WriteFile(p, []byte("secret of "+strconv.Itoa(int(id.uid))), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, int(id.uid), int(id.gid)); err != nil {
			t.Fatal(err)
		}
	}
	root := identity{0, 0}
	mkdir(filepath.Join(fx.base, "shared"), 0o755, root)
	mkdir(filepath.Join(fx.base, "a"), 0o700, tenantA)
	mkdir(filepath.Join(fx.base, "b"), 0o700, tenantB)
	mkdir(fx.rootDir, 0o755, root)
	file(fx.aShared, tenantA)
	file(fx.bShared, tenantB)
	file(fx.aSecret, tenantA)
	file(fx.bSecret, tenantB)
	if err := os.Symlink("../shared/b.txt", fx.aLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(fx.aLink, int(tenantA.uid), int(tenantA.gid)); err != nil {
		t.Fatal(err)
	}
	return fx
}

func tryOpen(p string) error {
	f, err := os.Open(p)
	if err == nil {
		f.Close()
	}
	return err
}

func tryCreate(p string) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
	if err == nil {
		f.Close()
		os.Remove(p)
	}
	return err
}

// taskStatus is the credential part of /proc/PID/task/TID/status.
type taskStatus struct {
	uid, gid               [4]uint32 // real, effective, saved, fs
	capEff, capPrm, capBnd uint64
	noNewPrivs             bool
}

func parseStatus(path string) (taskStatus, error) {
	var st taskStatus
	f, err := os.Open(path)
	if err != nil {
		return st, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		switch k {
		case "Uid", "Gid":
			var ids [4]uint32
			for i := 0; i < 4 && i < len(fields); i++ {
				n, _ := strconv.ParseUint(fields[i], 10, 32)
				ids[i] = uint32(n)
			}
			if k == "Uid" {
				st.uid = ids
			} else {
				st.gid = ids
			}
		case "CapEff", "CapPrm", "CapBnd":
			n, _ := strconv.ParseUint(fields[0], 16, 64)
			switch k {
			case "CapEff":
				st.capEff = n
			case "CapPrm":
				st.capPrm = n
			case "CapBnd":
				st.capBnd = n
			}
		case "NoNewPrivs":
			st.noNewPrivs = len(fields) > 0 && fields[0] == "1"
		}
	}
	return st, sc.Err()
}

// taskStatuses returns the status of every thread of this process (threads
// that exit while being read are left out).
func taskStatuses() map[int]taskStatus {
	ents, _ := os.ReadDir("/proc/self/task")
	out := make(map[int]taskStatus, len(ents))
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := parseStatus(filepath.Join("/proc/self/task", e.Name(), "status")); err == nil {
			out[tid] = st
		}
	}
	return out
}

func serverIDs() ([4]uint32, [4]uint32) {
	u, g := uint32(os.Getuid()), uint32(os.Getgid())
	return [4]uint32{u, u, u, u}, [4]uint32{g, g, g, g}
}

// waitServerOnly waits until every thread of the process has the server's
// identity again (worker threads exit asynchronously).
func waitServerOnly(t *testing.T) {
	t.Helper()
	su, sg := serverIDs()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var bad []string
		for tid, st := range taskStatuses() {
			if st.uid != su || st.gid != sg {
				bad = append(bad, strconv.Itoa(tid)+":"+strconv.Itoa(int(st.uid[1])))
			}
		}
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads still not the server identity: %v", bad)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newTenant(t *testing.T, mode sandbox.Mode, id identity, mod ...func(*sandbox.Options)) *sandbox.Tenant {
	t.Helper()
	opts := sandbox.Options{Mode: mode, Identity: id.sandbox()}
	for _, f := range mod {
		f(&opts)
	}
	tn, err := sandbox.NewTenant(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tn.Close)
	return tn
}

// TestFileIsolation: in every switching mode, a tenant reaches its own files
// and none of the other tenant's or root's, and its thread has no effective
// capability and no_new_privs set while fn runs.
func TestFileIsolation(t *testing.T) {
	sandboxtest.RequireRoot(t)
	fx := newFixture(t)
	for _, mode := range switchingModes {
		t.Run(string(mode), func(t *testing.T) {
			tests := []struct {
				who     identity
				path    string
				create  bool
				wantErr error
			}{
				{tenantA, fx.aShared, false, nil},
				{tenantA, fx.aSecret, false, nil},
				{tenantA, fx.bShared, false, unix.EACCES},
				{tenantA, fx.bSecret, false, unix.EACCES},
				{tenantA, fx.aLink, false, unix.EACCES},
				{tenantA, filepath.Join(fx.rootDir, "new"), true, unix.EACCES},
				{tenantA, filepath.Join(fx.base, "a", "new"), true, nil},
				{tenantB, fx.bShared, false, nil},
				{tenantB, fx.bSecret, false, nil},
				{tenantB, fx.aShared, false, unix.EACCES},
				{tenantB, fx.aSecret, false, unix.EACCES},
				{tenantB, filepath.Join(fx.rootDir, "new"), true, unix.EACCES},
			}
			tenants := map[identity]*sandbox.Tenant{tenantA: newTenant(t, mode, tenantA), tenantB: newTenant(t, mode, tenantB)}
			for _, tt := range tests {
				var err error
				var st taskStatus
				var stErr error
				runErr := tenants[tt.who].Run(context.Background(), func() {
					if tt.create {
						err = tryCreate(tt.path)
					} else {
						err = tryOpen(tt.path)
					}
					st, stErr = parseStatus("/proc/thread-self/status")
				})
				if runErr != nil {
					t.Fatalf("Run: %v", runErr)
				}
				if (tt.wantErr == nil) != (err == nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
					t.Errorf("uid %d %s %s: err %v, want %v", tt.who.uid, map[bool]string{true: "create", false: "open"}[tt.create], tt.path, err, tt.wantErr)
				}
				su, _ := serverIDs()
				want := [4]uint32{su[0], tt.who.uid, su[2], tt.who.uid}
				if stErr != nil || st.uid != want || st.gid[1] != tt.who.gid || st.capEff != 0 || !st.noNewPrivs {
					t.Errorf("thread status in fn: %+v (%v), want uid %v, CapEff 0, NoNewPrivs 1", st, stErr, want)
				}
			}
		})
	}
	waitServerOnly(t)
}

// TestSignalAndPtraceRefused: a process running as tenant A can neither
// signal nor ptrace the thread running A's fn, because that thread's real
// and saved uid are the server's.
func TestSignalAndPtraceRefused(t *testing.T) {
	sandboxtest.RequireRoot(t)
	exe := helperExecutable(t)
	credA := &syscall.Credential{Uid: tenantA.uid, Gid: tenantA.gid}

	// Control: the helper running as A may signal a process of A's.
	sleeper := startSleeper(t, credA)
	got := attackPid(t, exe, credA, sleeper, sleeper, false)
	if !strings.HasPrefix(got, "tgkill=ok") {
		t.Fatalf("control: helper as uid %d signalling its own process: %q", tenantA.uid, got)
	}

	for _, mode := range switchingModes {
		t.Run(string(mode), func(t *testing.T) {
			tn := newTenant(t, mode, tenantA)
			tids := make(chan int)
			release := make(chan struct{})
			done := make(chan error)
			go func() {
				done <- tn.Run(context.Background(), func() {
					tids <- unix.Gettid()
					<-release
				})
			}()
			tid := <-tids
			got := attackPid(t, exe, credA, os.Getpid(), tid, true)
			if got != "tgkill=EPERM stop=EPERM ptrace=EPERM uid="+strconv.Itoa(int(tenantA.uid)) {
				t.Errorf("attack on worker thread %d as uid %d: %q, want all EPERM", tid, tenantA.uid, got)
			}
			// Control: root may signal it (signal 0 only).
			if got := attackPid(t, exe, nil, os.Getpid(), tid, false); !strings.HasPrefix(got, "tgkill=ok") {
				t.Errorf("control: root signalling worker: %q", got)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
	waitServerOnly(t)
}

// TestTenantIDsOnlyOnWorkerThreads: while workers of two tenants are busy,
// and one of them has just started goroutines that block in syscalls (so
// the runtime creates threads while a tenant thread runs), only the worker
// threads carry tenant ids: Go clones new threads from its template thread
// when the creating thread is locked.
func TestTenantIDsOnlyOnWorkerThreads(t *testing.T) {
	sandboxtest.RequireRoot(t)
	for _, mode := range switchingModes {
		t.Run(string(mode), func(t *testing.T) {
			before := taskStatuses()
			// More sleepers than there are threads, so that idle threads
			// left by earlier tests cannot absorb them all.
			sleepers := len(before)/4 + 4
			release := make(chan struct{})
			type worker struct {
				id  identity
				tid int
			}
			workers := make(chan worker, 4)
			var wg sync.WaitGroup
			for _, id := range []identity{tenantA, tenantA, tenantB, tenantB} {
				tn := newTenant(t, mode, id)
				wg.Go(func() {
					if err := tn.Run(context.Background(), func() {
						// Goroutines started from a locked tenant thread,
						// each blocking in a syscall: the runtime must
						// start new threads to run the others.
						var inner sync.WaitGroup
						for range sleepers {
							inner.Go(func() {
								ts := unix.NsecToTimespec(int64(time.Second))
								unix.Nanosleep(&ts, nil)
							})
						}
						workers <- worker{id, unix.Gettid()}
						<-release
						inner.Wait()
					}); err != nil {
						t.Error(err)
					}
				})
			}
			want := map[int]identity{}
			for range 4 {
				w := <-workers
				want[w.tid] = w.id
			}
			// Check every thread repeatedly while the sleepers (1s each)
			// block, until the runtime has created new threads.
			su, sg := serverIDs()
			created := 0
			for deadline := time.Now().Add(800 * time.Millisecond); created == 0 && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
				for tid, st := range taskStatuses() {
					id, isWorker := want[tid]
					if _, ok := before[tid]; !ok && !isWorker {
						created++
					}
					if isWorker {
						if st.uid != [4]uint32{su[0], id.uid, su[2], id.uid} || st.gid != [4]uint32{sg[0], id.gid, sg[2], id.gid} || st.capEff != 0 {
							t.Errorf("worker %d: uid %v gid %v capeff %#x, want tenant %d", tid, st.uid, st.gid, st.capEff, id.uid)
						}
						continue
					}
					if st.uid != su || st.gid != sg {
						t.Errorf("non-worker thread %d has uid %v gid %v (server %v)", tid, st.uid, st.gid, su)
					}
				}
			}
			if created == 0 {
				t.Errorf("no thread created while tenant threads ran; the check needs the runtime to create some")
			}
			close(release)
			wg.Wait()
		})
	}
	waitServerOnly(t)
}

// countTenantThreads counts threads whose effective uid is id's.
func countTenantThreads(id identity) int {
	n := 0
	for _, st := range taskStatuses() {
		if st.uid[1] == id.uid {
			n++
		}
	}
	return n
}

// TestThreadPoolGrowsAndShrinks: the pool grows to MaxWorkers under load,
// queues the rest, reuses workers, and returns to zero threads after
// IdleTimeout.
func TestThreadPoolGrowsAndShrinks(t *testing.T) {
	sandboxtest.RequireRoot(t)
	tn := newTenant(t, sandbox.ModeThread, tenantA, func(o *sandbox.Options) {
		o.MaxWorkers = 4
		o.IdleTimeout = 150 * time.Millisecond
	})
	if s := tn.Stats(); s.Workers != 0 || countTenantThreads(tenantA) != 0 {
		t.Fatalf("before any Run: %+v", s)
	}
	release := make(chan struct{})
	var tids sync.Map
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if err := tn.Run(context.Background(), func() {
				tids.Store(unix.Gettid(), true)
				<-release
			}); err != nil {
				t.Error(err)
			}
		})
	}
	sandboxtest.WaitFor(t, "4 busy workers and 6 queued Runs", func() bool { s := tn.Stats(); return s.Workers == 4 && s.Busy == 4 && s.Queued == 6 })
	if n := countTenantThreads(tenantA); n != 4 {
		t.Fatalf("%d threads carry the tenant uid, want 4", n)
	}
	if s := tn.Stats(); s.Workers != 4 || s.Started != 4 {
		t.Fatalf("pool exceeded MaxWorkers: %+v", s)
	}
	close(release)
	wg.Wait()
	n := 0
	tids.Range(func(any, any) bool { n++; return true })
	if s := tn.Stats(); s.Runs != 10 || s.Started != 4 || n != 4 {
		t.Fatalf("after load: %+v, %d distinct threads, want 10 runs on 4 threads", s, n)
	}
	sandboxtest.WaitFor(t, "idle workers to exit", func() bool { return tn.Stats().Workers == 0 && countTenantThreads(tenantA) == 0 })
	// A new Run starts a new worker.
	if err := tn.Run(context.Background(), func() {}); err != nil {
		t.Fatal(err)
	}
	if s := tn.Stats(); s.Started != 5 || s.Workers != 1 {
		t.Fatalf("after idle exit: %+v", s)
	}
	tn.Close()
	sandboxtest.WaitFor(t, "closed pool to exit", func() bool { return tn.Stats().Workers == 0 })
	waitServerOnly(t)
}

// TestQueuedRunHonoursContext: a Run waiting for a worker returns ctx.Err()
// without running fn; Close fails waiting Runs with ErrClosed.
func TestQueuedRunHonoursContext(t *testing.T) {
	sandboxtest.RequireRoot(t)
	tn := newTenant(t, sandbox.ModeThread, tenantA, func(o *sandbox.Options) { o.MaxWorkers = 1 })
	release := make(chan struct{})
	started := make(chan struct{})
	done := make(chan error)
	go func() { done <- tn.Run(context.Background(), func() { close(started); <-release }) }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var ran atomic.Bool
	if err := tn.Run(ctx, func() { ran.Store(true) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued Run = %v, want deadline exceeded", err)
	}
	if s := tn.Stats(); s.Queued != 0 || s.Workers != 1 {
		t.Fatalf("after the cancelled Run: %+v, want nothing queued and 1 worker", s)
	}
	queued := make(chan error)
	go func() { queued <- tn.Run(context.Background(), func() { ran.Store(true) }) }()
	sandboxtest.WaitFor(t, "second Run to queue", func() bool { return tn.Stats().Queued == 1 })
	tn.Close()
	if err := <-queued; !errors.Is(err, sandbox.ErrClosed) {
		t.Fatalf("queued Run after Close = %v, want ErrClosed", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ran.Load() {
		t.Fatal("a cancelled or closed Run ran its fn")
	}
	if err := tn.Run(context.Background(), func() {}); !errors.Is(err, sandbox.ErrClosed) {
		t.Fatalf("Run after Close = %v", err)
	}
	sandboxtest.WaitFor(t, "worker to exit after Close", func() bool { return tn.Stats().Workers == 0 && countTenantThreads(tenantA) == 0 })
}

// TestPanicRecovered: a panic in fn is returned as *PanicError; a thread
// worker survives it with its identity verified, the inline thread is back
// to the server.
func TestPanicRecovered(t *testing.T) {
	sandboxtest.RequireRoot(t)
	for _, mode := range switchingModes {
		t.Run(string(mode), func(t *testing.T) {
			tn := newTenant(t, mode, tenantA)
			var tid1, tid2 int
			var pe *sandbox.PanicError
			err := tn.Run(context.Background(), func() { tid1 = unix.Gettid(); panic("tenant bug") })
			if !errors.As(err, &pe) || pe.Value != "tenant bug" || len(pe.Stack) == 0 {
				t.Fatalf("Run = %v, want PanicError", err)
			}
			var euid int
			if err := tn.Run(context.Background(), func() { tid2 = unix.Gettid(); euid = unix.Geteuid() }); err != nil {
				t.Fatal(err)
			}
			if euid != int(tenantA.uid) {
				t.Fatalf("euid after panic = %d", euid)
			}
			if mode == sandbox.ModeThread && (tid1 != tid2 || tn.Stats().Workers != 1) {
				t.Fatalf("worker did not survive the panic: tids %d %d, %+v", tid1, tid2, tn.Stats())
			}
			if mode == sandbox.ModeInline {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if err := tn.Run(context.Background(), func() { panic("again") }); !errors.As(err, &pe) {
					t.Fatal(err)
				}
				checkServerThread(t)
			}
		})
	}
	waitServerOnly(t)
}

// checkServerThread checks the calling (locked) thread has the server's
// identity and effective capabilities.
func checkServerThread(t *testing.T) {
	t.Helper()
	c, err := sandbox.ThreadCreds()
	if err != nil {
		t.Fatal(err)
	}
	u, g := uint32(os.Getuid()), uint32(os.Getgid())
	if c.RUID != u || c.EUID != u || c.SUID != u || c.RGID != g || c.EGID != g || c.SGID != g || c.CapEff != c.CapPrm {
		t.Fatalf("thread %d not the server: %+v", c.TID, c)
	}
}

// TestInlineRestores: inline mode switches the caller's own thread and
// restores it exactly.
func TestInlineRestores(t *testing.T) {
	sandboxtest.RequireRoot(t)
	tn := newTenant(t, sandbox.ModeInline, tenantB)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := sandbox.ThreadCreds()
	if err != nil {
		t.Fatal(err)
	}
	var in sandbox.ThreadIdentity
	if err := tn.Run(context.Background(), func() { in, _ = sandbox.ThreadCreds() }); err != nil {
		t.Fatal(err)
	}
	after, err := sandbox.ThreadCreds()
	if err != nil {
		t.Fatal(err)
	}
	if in.TID != before.TID || in.EUID != tenantB.uid || in.EGID != tenantB.gid || in.RUID != before.RUID || in.SUID != before.SUID ||
		len(in.Groups) != 0 || in.CapEff != 0 || in.CapPrm != before.CapPrm || !in.NoNewPrivs {
		t.Fatalf("inside inline fn: %+v (before %+v)", in, before)
	}
	after.NoNewPrivs = before.NoNewPrivs // set for good by the first switch
	if after.TID != before.TID || !slices.Equal(after.Groups, before.Groups) ||
		after.RUID != before.RUID || after.EUID != before.EUID || after.SUID != before.SUID ||
		after.RGID != before.RGID || after.EGID != before.EGID || after.SGID != before.SGID ||
		after.CapEff != before.CapEff || after.CapPrm != before.CapPrm {
		t.Fatalf("inline did not restore: before %+v after %+v", before, after)
	}
	waitServerOnly(t)
}

// TestInlineGroups: supplementary groups are switched and restored.
func TestInlineGroups(t *testing.T) {
	sandboxtest.RequireRoot(t)
	id := sandbox.Identity{UID: 31003, GID: 31003, Groups: []uint32{31010, 31005}}
	for _, mode := range switchingModes {
		t.Run(string(mode), func(t *testing.T) {
			tn, err := sandbox.NewTenant(sandbox.Options{Mode: mode, Identity: id})
			if err != nil {
				t.Fatal(err)
			}
			defer tn.Close()
			var groups []uint32
			if err := tn.Run(context.Background(), func() {
				c, _ := sandbox.ThreadCreds()
				groups = c.Groups
			}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(groups, []uint32{31005, 31010}) {
				t.Fatalf("groups in fn = %v", groups)
			}
		})
	}
	waitServerOnly(t)
}

// TestThreadPerRequestThreadsExit: every thread-per-request thread is
// destroyed after its Run.
func TestThreadPerRequestThreadsExit(t *testing.T) {
	sandboxtest.RequireRoot(t)
	tn := newTenant(t, sandbox.ModeThreadPerRequest, tenantA)
	var mu sync.Mutex
	var tids []int
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := tn.Run(context.Background(), func() {
				mu.Lock()
				tids = append(tids, unix.Gettid())
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if s := tn.Stats(); s.Started != 20 || s.Runs != 20 {
		t.Fatalf("stats %+v", s)
	}
	sandboxtest.WaitFor(t, "thread-per-request threads to exit", func() bool {
		for _, tid := range tids {
			if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid)); err == nil {
				return false
			}
		}
		return tn.Stats().Workers == 0
	})
	waitServerOnly(t)
}

// TestStressNoCrossTenant: 2 tenants x 200 concurrent Runs per mode; every
// fn sees exactly its tenant's effective ids.
func TestStressNoCrossTenant(t *testing.T) {
	sandboxtest.RequireRoot(t)
	for _, mode := range switchingModes {
		t.Run(string(mode), func(t *testing.T) {
			var wrong, runs atomic.Int64
			var wg sync.WaitGroup
			for _, id := range []identity{tenantA, tenantB} {
				tn := newTenant(t, mode, id, func(o *sandbox.Options) { o.MaxWorkers = 16 })
				for i := range 200 {
					wg.Go(func() {
						err := tn.Run(context.Background(), func() {
							runs.Add(1)
							if unix.Geteuid() != int(id.uid) || unix.Getegid() != int(id.gid) {
								wrong.Add(1)
							}
							if i%4 == 0 {
								time.Sleep(100 * time.Microsecond)
							} else {
								runtime.Gosched()
							}
							if unix.Geteuid() != int(id.uid) || unix.Getegid() != int(id.gid) {
								wrong.Add(1)
							}
						})
						if err != nil {
							t.Error(err)
						}
					})
				}
			}
			wg.Wait()
			if wrong.Load() != 0 || runs.Load() != 400 {
				t.Fatalf("%d of %d runs saw another identity", wrong.Load(), runs.Load())
			}
		})
	}
	waitServerOnly(t)
}

// TestDropPrivileges runs DropPrivileges in helper processes (it changes
// the whole process): switching to a non-root server user, after which every
// mode still isolates tenants with the effective capabilities dropped
// explicitly; and staying root with only the bounding set reduced. A cgo
// test binary must refuse the user switch without changing anything; the
// real thing is then checked with a CGO_ENABLED=0 build.
func TestDropPrivileges(t *testing.T) {
	sandboxtest.RequireRoot(t)
	fx := newFixture(t)
	run := func(t *testing.T, exe, helper string) string {
		t.Helper()
		cmd := osexecCommand(exe, helperEnv+"="+helper, "HELPER_SERVER_UID=31000", "HELPER_FIXTURE="+fx.base)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	exe := helperExecutable(t)
	var nocgo string
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_GETPID, 0, 0, 0); e == syscall.ENOTSUP {
		nocgo = nocgoHelper(t) // this binary links cgo
	}
	for _, helper := range []string{"dropuser", "droproot"} {
		t.Run(helper, func(t *testing.T) {
			got := run(t, exe, helper)
			if (got == "UNSUPPORTED" || got == "OK cgo") && nocgo != "" {
				got = run(t, nocgo, helper)
			}
			if got != "OK" {
				t.Fatalf("helper:\n%s", got)
			}
		})
	}
}

// TestDropPrivilegesMissingCap: without CAP_SETUID permitted, DropPrivileges
// names it and changes nothing. Runs on a thread that is then discarded.
func TestDropPrivilegesMissingCap(t *testing.T) {
	sandboxtest.RequireRoot(t)
	errc := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: this thread loses a capability
		if err := dropPermitted(unix.CAP_SETUID); err != nil {
			errc <- err
			return
		}
		errc <- sandbox.DropPrivileges(sandbox.Privileges{NeedSwitch: true}, nil)
	}()
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), "CAP_SETUID") || strings.Contains(err.Error(), "CAP_SETGID") {
		t.Fatalf("DropPrivileges without CAP_SETUID = %v, want an error naming CAP_SETUID only", err)
	}
	// Nothing changed: this thread still has a full bounding set.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, unix.CAP_SYS_ADMIN, 0, 0, 0); err != nil || in != 1 {
		t.Fatalf("bounding set changed by a failed DropPrivileges: %d %v", in, err)
	}
}

// dropPermitted removes capability c from the calling thread's permitted
// and effective sets.
func dropPermitted(c int) error {
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[c/32].Permitted &^= 1 << (c % 32)
	data[c/32].Effective &^= 1 << (c % 32)
	return unix.Capset(&hdr, &data[0])
}

// TestGoexitInFn: fn ending its goroutine releases the caller with
// ErrGoexit and discards the thread.
func TestGoexitInFn(t *testing.T) {
	sandboxtest.RequireRoot(t)
	for _, mode := range []sandbox.Mode{sandbox.ModeThread, sandbox.ModeThreadPerRequest} {
		t.Run(string(mode), func(t *testing.T) {
			tn := newTenant(t, mode, tenantA)
			var tid int
			if err := tn.Run(context.Background(), func() { tid = unix.Gettid(); runtime.Goexit() }); !errors.Is(err, sandbox.ErrGoexit) {
				t.Fatalf("Run = %v, want ErrGoexit", err)
			}
			sandboxtest.WaitFor(t, "the thread to exit", func() bool {
				_, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid))
				return err != nil && tn.Stats().Workers == 0 && tn.Stats().Busy == 0
			})
			if err := tn.Run(context.Background(), func() {}); err != nil {
				t.Fatal(err)
			}
		})
	}
	waitServerOnly(t)
}
