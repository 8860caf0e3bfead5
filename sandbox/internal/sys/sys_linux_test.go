//go:build linux

package sys

import (
	"os"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/sandbox/sandboxtest"
)

func TestGetters(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, e, s, err := Getresuid()
	if err != nil || int(r) != os.Getuid() || int(e) != os.Geteuid() || s != e {
		t.Fatalf("Getresuid = %d %d %d %v", r, e, s, err)
	}
	rg, eg, _, err := Getresgid()
	if err != nil || int(rg) != os.Getgid() || int(eg) != os.Getegid() {
		t.Fatalf("Getresgid = %d %d %v", rg, eg, err)
	}
	want, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, buf := range [][]uint32{nil, make([]uint32, 0, 1), make([]uint32, 0, 64)} {
		got, err := Getgroups(buf)
		if err != nil {
			t.Fatal(err)
		}
		var g []int
		for _, x := range got {
			g = append(g, int(x))
		}
		if !slices.Equal(g, want) && !(len(g) == 0 && len(want) == 0) {
			t.Fatalf("Getgroups = %v, want %v", g, want)
		}
	}
	c, err := Capget()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 && !Has(c.Effective, Mask(unix.CAP_SETUID)|Mask(unix.CAP_SETGID)) {
		t.Fatalf("root without CAP_SETUID/CAP_SETGID effective: %+v", c)
	}
	if Gettid() != unix.Gettid() {
		t.Fatal("Gettid mismatch")
	}
	if last, err := CapLastCap(); err != nil || last < unix.CAP_SETUID {
		t.Fatalf("CapLastCap = %d %v", last, err)
	}
}

// TestThreadScoped: the raw setters change only the calling thread.
func TestThreadScoped(t *testing.T) {
	sandboxtest.RequireRoot(t)
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: this thread's creds change
		if err := Setgroups([]uint32{31007}); err != nil {
			done <- err
			return
		}
		if err := Setresgid(Unchanged, 31007, Unchanged); err != nil {
			done <- err
			return
		}
		if err := Setresuid(Unchanged, 31007, Unchanged); err != nil {
			done <- err
			return
		}
		_, e, _, _ := Getresuid()
		g, _ := Getgroups(nil)
		if e != 31007 || !slices.Equal(g, []uint32{31007}) {
			t.Errorf("thread: euid %d groups %v", e, g)
		}
		// Errors are *os.SyscallError: setting an id we may not.
		if err := Setresuid(31008, Unchanged, Unchanged); err == nil {
			t.Error("setresuid to a foreign ruid succeeded without caps")
		} else if _, ok := err.(*os.SyscallError); !ok {
			t.Errorf("error %T is not *os.SyscallError", err)
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		t.Fatal("the process's euid changed")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, e, _, _ := Getresuid(); e != 0 {
		t.Fatal("another thread's euid changed")
	}
}
