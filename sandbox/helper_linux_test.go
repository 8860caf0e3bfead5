//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// The test binary re-executes itself as a helper process selected by this
// environment variable (see TestMain).
const helperEnv = "HOSTD_SANDBOX_TEST_HELPER"

func runHelper(name string) int {
	switch name {
	case "attack":
		return helperAttack()
	case "dropuser":
		return helperDropUser()
	case "droproot":
		return helperDropRoot()
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
	return 2
}

func errnoName(err error) string {
	if err == nil {
		return "ok"
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return unix.ErrnoName(e)
	}
	return err.Error()
}

// helperAttack tries to signal and ptrace thread HELPER_TID of process
// HELPER_PID and prints "tgkill=<result> stop=<result> ptrace=<result>".
// SIGSTOP is only tried when the harmless signal 0 was refused (both take
// the same permission check), so a broken sandbox fails the test instead
// of stopping it.
func helperAttack() int {
	pid, _ := strconv.Atoi(os.Getenv("HELPER_PID"))
	tid, _ := strconv.Atoi(os.Getenv("HELPER_TID"))
	sig0 := unix.Tgkill(pid, tid, 0)
	stop := "skipped"
	if sig0 != nil {
		stop = errnoName(unix.Tgkill(pid, tid, unix.SIGSTOP))
	}
	ptrace := "skipped"
	if os.Getenv("HELPER_PTRACE") == "1" {
		runtime.LockOSThread()
		err := unix.PtraceAttach(tid)
		ptrace = errnoName(err)
		if err == nil {
			var ws unix.WaitStatus
			unix.Wait4(tid, &ws, unix.WALL, nil)
			unix.PtraceDetach(tid)
		}
	}
	fmt.Printf("tgkill=%s stop=%s ptrace=%s uid=%d\n", errnoName(sig0), stop, ptrace, os.Getuid())
	return 0
}

// attackPid runs the attack helper as cred (nil: as root) against thread tid
// of process pid and returns its report.
func attackPid(t *testing.T, exe string, cred *syscall.Credential, pid, tid int, ptrace bool) string {
	t.Helper()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=attack",
		"HELPER_PID="+strconv.Itoa(pid), "HELPER_TID="+strconv.Itoa(tid), "HELPER_PTRACE="+map[bool]string{true: "1"}[ptrace])
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("attack helper: %v: %s", err, stderr.String())
	}
	return strings.TrimSpace(out.String())
}

// helperExecutable copies the test binary where any uid can execute it.
func helperExecutable(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := openTempDir(t)
	dst := filepath.Join(dir, "helper.test")
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// helperDropUser runs DropPrivileges to the non-root server user given in
// HELPER_SERVER_UID, then exercises every switching mode against the
// fixture in HELPER_FIXTURE. It prints "OK" or one "FAIL ..." line per
// problem.
func helperDropUser() int {
	srvUID, _ := strconv.Atoi(os.Getenv("HELPER_SERVER_UID"))
	fx := fixtureAt(os.Getenv("HELPER_FIXTURE"))
	var fails []string
	fail := func(format string, args ...any) { fails = append(fails, fmt.Sprintf("FAIL "+format, args...)) }

	err := sandbox.DropPrivileges(sandbox.Privileges{
		NeedSwitch: true,
		User:       &sandbox.Identity{UID: uint32(srvUID), GID: uint32(srvUID), Groups: []uint32{uint32(srvUID)}},
	}, nil)
	if errors.Is(err, sandbox.ErrAllThreadsUnsupported) {
		// A cgo build: nothing may have changed.
		for tid, st := range taskStatuses() {
			if st.uid != [4]uint32{} {
				fail("thread %d changed by a refused DropPrivileges: %+v", tid, st)
			}
		}
		fails = append(fails, "UNSUPPORTED")
		fmt.Println(strings.Join(fails, "\n"))
		return 0
	}
	if err != nil {
		fmt.Printf("FAIL DropPrivileges: %v\n", err)
		return 0
	}
	want := uint64(1)<<unix.CAP_SETUID | uint64(1)<<unix.CAP_SETGID
	// Every thread, not just this one, must be the server user now.
	for tid, st := range taskStatuses() {
		if st.uid != [4]uint32{uint32(srvUID), uint32(srvUID), uint32(srvUID), uint32(srvUID)} || st.capBnd != want || st.capPrm != want {
			fail("thread %d after DropPrivileges: %+v", tid, st)
		}
	}
	srv, err := sandbox.ThreadCreds()
	if err != nil || srv.RUID != uint32(srvUID) || srv.EUID != uint32(srvUID) || srv.CapPrm != want || srv.CapEff != want {
		fail("server thread creds %+v %v", srv, err)
	}
	// Not on the main goroutine: it holds the main thread, which inline
	// mode refuses.
	done := make(chan struct{})
	go func() {
		defer close(done)
		checkModesAsServerUser(uint32(srvUID), fx, fail)
	}()
	<-done
	if len(fails) == 0 {
		fmt.Println("OK")
	}
	for _, f := range fails {
		fmt.Println(f)
	}
	return 0
}

func checkModesAsServerUser(srvUID uint32, fx fixture, fail func(string, ...any)) {
	want := uint64(1)<<unix.CAP_SETUID | uint64(1)<<unix.CAP_SETGID
	for _, mode := range []sandbox.Mode{sandbox.ModeThread, sandbox.ModeThreadPerRequest, sandbox.ModeInline} {
		for _, who := range []struct {
			id                 identity
			own, other, other2 string
		}{{tenantA, fx.aShared, fx.bShared, fx.bSecret}, {tenantB, fx.bShared, fx.aShared, fx.aSecret}} {
			tn, err := sandbox.NewTenant(sandbox.Options{Mode: mode, Identity: who.id.sandbox()})
			if err != nil {
				fail("%s NewTenant: %v", mode, err)
				continue
			}
			var in sandbox.ThreadIdentity
			var ownErr, otherErr, other2Err, rootErr error
			runtime.LockOSThread()
			before, _ := sandbox.ThreadCreds()
			err = tn.Run(context.Background(), func() {
				in, _ = sandbox.ThreadCreds()
				ownErr = tryOpen(who.own)
				otherErr = tryOpen(who.other)
				other2Err = tryOpen(who.other2)
				rootErr = tryCreate(filepath.Join(fx.rootDir, "x"))
			})
			after, _ := sandbox.ThreadCreds()
			runtime.UnlockOSThread()
			if err != nil {
				fail("%s Run: %v", mode, err)
			}
			if in.EUID != who.id.uid || in.EGID != who.id.gid || in.RUID != srvUID || in.SUID != srvUID || in.CapEff != 0 || in.CapPrm != want || !in.NoNewPrivs {
				fail("%s creds in fn %+v", mode, in)
			}
			if ownErr != nil || !errors.Is(otherErr, unix.EACCES) || !errors.Is(other2Err, unix.EACCES) || !errors.Is(rootErr, unix.EACCES) {
				fail("%s uid %d: own %v, other %v, other dir %v, root dir %v", mode, who.id.uid, ownErr, otherErr, other2Err, rootErr)
			}
			if mode == sandbox.ModeInline && (after.TID != in.TID || after.EUID != before.EUID || after.CapEff != before.CapEff || after.EGID != before.EGID) {
				fail("inline not restored: before %+v in %+v after %+v", before, in, after)
			}
			tn.Close()
		}
	}
	// Mode uring: the personality registered by a server user that holds
	// CAP_SETUID/CAP_SETGID is the tenant's, without capabilities.
	rings, err := sandbox.NewRings(1)
	if err != nil {
		return // io_uring unusable here: nothing more to check
	}
	defer rings.Close()
	rel := func(p string) string { r, _ := filepath.Rel(fx.base, p); return r }
	for _, who := range []struct {
		id                 identity
		own, other, other2 string
	}{{tenantA, fx.aShared, fx.bShared, fx.bSecret}, {tenantB, fx.bShared, fx.aShared, fx.aSecret}} {
		tn, err := sandbox.NewTenant(sandbox.Options{Mode: sandbox.ModeUring, Identity: who.id.sandbox(), Rings: rings})
		if err != nil {
			fail("uring NewTenant: %v", err)
			continue
		}
		g, err := tn.NewFS(fx.base)
		if err != nil {
			fail("uring NewFS: %v", err)
			tn.Close()
			continue
		}
		f, ownErr := g.Open(rel(who.own))
		if ownErr == nil {
			f.Close()
		}
		_, otherErr := g.Open(rel(who.other))
		_, other2Err := g.Open(rel(who.other2))
		_, rootErr := g.OpenFile(rel(filepath.Join(fx.rootDir, "x")), os.O_WRONLY|os.O_CREATE, 0o644)
		if ownErr != nil || !errors.Is(otherErr, unix.EACCES) || !errors.Is(other2Err, unix.EACCES) || !errors.Is(rootErr, unix.EACCES) {
			fail("uring uid %d: own %v, other %v, other dir %v, root dir %v", who.id.uid, ownErr, otherErr, other2Err, rootErr)
		}
		g.Close()
		tn.Close()
	}
}

// startSleeper starts a process running as cred and returns its pid.
func startSleeper(t *testing.T, cred *syscall.Credential) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd.Process.Pid
}

func osexecCommand(exe string, env ...string) *exec.Cmd {
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// helperDropRoot runs DropPrivileges keeping root and prints "OK" or
// "FAIL ..." lines: in a non-cgo binary every thread's bounding set must be
// CAP_SETUID|CAP_SETGID|CAP_KILL afterwards; in a cgo binary it is left as
// it was. Permitted and effective sets stay as they were.
func helperDropRoot() int {
	_, _, e := syscall.AllThreadsSyscall(unix.SYS_GETPID, 0, 0, 0)
	cgo := e == syscall.ENOTSUP
	before := taskStatuses()
	err := sandbox.DropPrivileges(sandbox.Privileges{NeedSwitch: true, KeepCaps: []int{unix.CAP_KILL}}, nil)
	if err != nil {
		fmt.Printf("FAIL DropPrivileges: %v\n", err)
		return 0
	}
	keep := uint64(1)<<unix.CAP_SETUID | uint64(1)<<unix.CAP_SETGID | uint64(1)<<unix.CAP_KILL
	var fails []string
	for tid, st := range taskStatuses() {
		old, ok := before[tid]
		if !ok {
			old = st
		}
		wantBnd := keep & old.capBnd
		if cgo {
			wantBnd = old.capBnd
		}
		if st.capBnd != wantBnd || st.capPrm != old.capPrm || st.capEff != old.capEff || st.uid != [4]uint32{} {
			fails = append(fails, fmt.Sprintf("FAIL thread %d (cgo %v): %+v, before %+v", tid, cgo, st, old))
		}
	}
	if len(fails) == 0 {
		if cgo {
			fmt.Println("OK cgo") // the caller retries with a non-cgo build
		} else {
			fmt.Println("OK")
		}
	}
	fmt.Print(strings.Join(fails, "\n"))
	return 0
}

// nocgoHelper builds this test package with CGO_ENABLED=0 (DropPrivileges
// needs syscall.AllThreadsSyscall, which a cgo binary lacks).
func nocgoHelper(t *testing.T) string {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		sandboxtest.Skipf(t, "no go command to build a non-cgo helper: %v", err)
	}
	exe := filepath.Join(openTempDir(t), "nocgo.test")
	build := exec.Command(gobin, "test", "-c", "-o", exe, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building a non-cgo helper: %v\n%s", err, out)
	}
	return exe
}
