//go:build linux

package sandbox

import (
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/sandbox/internal/sys"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

func TestMissingCaps(t *testing.T) {
	setuid, setgid := uint64(1)<<unix.CAP_SETUID, uint64(1)<<unix.CAP_SETGID
	tests := []struct {
		permitted uint64
		want      []string // substrings; nil: no error
	}{
		{setuid | setgid, nil},
		{^uint64(0), nil},
		{setuid, []string{"CAP_SETGID"}},
		{setgid, []string{"CAP_SETUID"}},
		{0, []string{"CAP_SETUID", "CAP_SETGID"}},
	}
	for _, tt := range tests {
		err := missingCaps(tt.permitted, unix.CAP_SETUID, unix.CAP_SETGID)
		if tt.want == nil {
			if err != nil {
				t.Errorf("missingCaps(%#x) = %v", tt.permitted, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("missingCaps(%#x) = nil, want an error naming %v", tt.permitted, tt.want)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("missingCaps(%#x) = %q, want it to name %s", tt.permitted, err, w)
			}
		}
		if tt.permitted&setuid != 0 && strings.Contains(err.Error(), "CAP_SETUID") {
			t.Errorf("missingCaps(%#x) = %q names a permitted capability", tt.permitted, err)
		}
	}
}

// TestSwitchFailureIsReported: a thread that cannot switch (the
// thread lacks CAP_SETGID) reports an error and fn never runs as the server.
func TestSwitchFailureIsReported(t *testing.T) {
	sandboxtest.RequireRoot(t)
	errc := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: this thread's caps change
		c, err := sys.Capget()
		if err != nil {
			errc <- err
			return
		}
		c.Effective &^= 1 << unix.CAP_SETGID
		c.Permitted &^= 1 << unix.CAP_SETGID
		if err := sys.Capset(c); err != nil {
			errc <- err
			return
		}
		_, err = enterTenant(&Identity{UID: 31001, GID: 31001})
		errc <- err
	}()
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "EPERM") && !strings.Contains(err.Error(), "operation not permitted") {
		t.Fatalf("enterTenant without CAP_SETGID = %v, want EPERM", err)
	}
}

// BenchmarkSwitchRestore measures the raw per-thread switch to a tenant and
// back, with the restore verified (what inline mode does around fn).
func BenchmarkSwitchRestore(b *testing.B) {
	sandboxtest.RequireRoot(b)
	// Unlocked only after a verified restore: a failed one ends this
	// goroutine locked, so the thread is destroyed.
	runtime.LockOSThread()
	var srv serverState
	if err := srv.snapshot(); err != nil {
		b.Fatal(err)
	}
	id := &Identity{UID: 31001, GID: 31001}
	b.ReportAllocs()
	for b.Loop() {
		if err := switchTo(id, &srv); err != nil {
			b.Fatal(err)
		}
		if err := restore(&srv); err != nil {
			b.Fatal(err)
		}
	}
	runtime.UnlockOSThread()
}
