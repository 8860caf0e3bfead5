//go:build linux

package uring

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/sandbox/internal/sys"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

func newRing(t testing.TB) *Ring {
	t.Helper()
	r, err := New(4)
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
		sandboxtest.Skipf(t, "io_uring unavailable here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// openat2 opens path relative to dirfd through r with personality pers.
func openat2(r *Ring, dirfd int, path string, flags uint64, resolve uint64, pers uint16) (int, error) {
	s := r.Scratch()
	n := copy(s.Path[0][:len(s.Path[0])-1], path)
	s.Path[0][n] = 0
	s.How = unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: resolve}
	res, err := r.Submit(&SQE{
		Opcode:      OpOpenat2,
		Fd:          int32(dirfd),
		Addr:        uint64(uintptr(unsafe.Pointer(&s.Path[0][0]))),
		Off:         uint64(uintptr(unsafe.Pointer(&s.How))),
		Len:         uint32(unsafe.Sizeof(s.How)),
		Personality: pers,
	})
	if err != nil {
		return -1, err
	}
	if res < 0 {
		return -1, unix.Errno(-res)
	}
	return int(res), nil
}

func TestProbeAndNop(t *testing.T) {
	r := newRing(t)
	missing, err := r.Probe(Ops)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Fatalf("kernel lacks %v", missing)
	}
	for range 100 {
		res, err := r.Submit(&SQE{Opcode: OpNop})
		if err != nil || res != 0 {
			t.Fatalf("nop: %d %v", res, err)
		}
	}
}

func TestOpenBeneath(t *testing.T) {
	r := newRing(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(dir, "abs"))
	os.Symlink("../../../../../../etc/passwd", filepath.Join(dir, "rel"))
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS
	fd, err := openat2(r, dfd, "f", unix.O_RDONLY, beneath, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	for _, p := range []string{"abs", "rel", "../f", "/etc/passwd"} {
		if fd, err := openat2(r, dfd, p, unix.O_RDONLY, beneath, 0); !errors.Is(err, unix.EXDEV) {
			if fd >= 0 {
				unix.Close(fd)
			}
			t.Errorf("%s: %v, want EXDEV", p, err)
		}
	}
}

// TestRestricted checks that the ring refuses operations outside Ops.
func TestRestricted(t *testing.T) {
	r := newRing(t)
	const opRead = 22
	res, err := r.Submit(&SQE{Opcode: opRead, Fd: 0})
	if err != nil {
		t.Fatal(err)
	}
	if res != -int32(unix.EACCES) {
		t.Fatalf("IORING_OP_READ on a restricted ring: %d, want -EACCES", res)
	}
	// The ring still works.
	if res, err := r.Submit(&SQE{Opcode: OpNop}); err != nil || res != 0 {
		t.Fatalf("nop after refusal: %d %v", res, err)
	}
}

// TestPersonality registers a tenant's credentials from a switched thread
// and checks that operations naming them are checked against the tenant,
// without CAP_DAC_OVERRIDE.
func TestPersonality(t *testing.T) {
	sandboxtest.RequireRoot(t)
	r := newRing(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	for p := dir; p != "/"; p = filepath.Dir(p) {
		fi, _ := os.Stat(p)
		if fi.Mode().Perm()&0o001 == 0 { // never touch /tmp's sticky bit
			os.Chmod(p, fi.Mode()&(os.ModePerm|os.ModeSticky|os.ModeSetuid|os.ModeSetgid)|0o111)
		}
	}
	mine, rootOnly := filepath.Join(dir, "mine"), filepath.Join(dir, "root")
	os.WriteFile(mine, []byte("mine"), 0o600)
	os.Chown(mine, 31101, 31101)
	os.WriteFile(rootOnly, []byte("root"), 0o600)

	type reg struct {
		id  uint16
		err error
	}
	ch := make(chan reg)
	go func() {
		// The thread is switched and never unlocked: it dies with the
		// goroutine.
		runtime.LockOSThread()
		if err := sys.Setresgid(sys.Unchanged, 31101, sys.Unchanged); err != nil {
			ch <- reg{err: err}
			return
		}
		if err := sys.Setresuid(sys.Unchanged, 31101, sys.Unchanged); err != nil {
			ch <- reg{err: err}
			return
		}
		id, err := r.RegisterPersonality()
		ch <- reg{id, err}
	}()
	rg := <-ch
	if rg.err != nil {
		t.Fatal(rg.err)
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS
	fd, err := openat2(r, dfd, "mine", unix.O_RDONLY, beneath, rg.id)
	if err != nil {
		t.Fatalf("tenant opening its own file: %v", err)
	}
	unix.Close(fd)
	if fd, err := openat2(r, dfd, "root", unix.O_RDONLY, beneath, rg.id); !errors.Is(err, unix.EACCES) {
		unix.Close(fd)
		t.Fatalf("tenant opening a root-owned 0600 file: %v, want EACCES", err)
	}
	// Without a personality the ring runs as the submitter (root).
	fd, err = openat2(r, dfd, "root", unix.O_RDONLY, beneath, 0)
	if err != nil {
		t.Fatalf("server opening its own file: %v", err)
	}
	unix.Close(fd)

	if res, err := r.Submit(&SQE{Opcode: OpNop, Personality: rg.id}); err != nil || res != 0 {
		t.Fatalf("nop with the registered personality: %d %v", res, err)
	}
	if err := r.UnregisterPersonality(rg.id); err != nil {
		t.Fatal(err)
	}
	if _, err := openat2(r, dfd, "mine", unix.O_RDONLY, beneath, rg.id); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("unregistered personality: %v, want EINVAL", err)
	}
	if res, _ := r.Submit(&SQE{Opcode: OpNop, Personality: rg.id}); res != -int32(unix.EINVAL) {
		t.Fatalf("nop with an unregistered personality: %d, want -EINVAL", res)
	}
}

// TestCloseOnExec: a child process must never inherit a ring (it would
// inherit every personality registered on it).
func TestCloseOnExec(t *testing.T) {
	r := newRing(t)
	flags, err := unix.FcntlInt(uintptr(r.FD()), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.FD_CLOEXEC == 0 {
		t.Fatal("the ring's descriptor is not close-on-exec")
	}
}

// countFDs returns how many descriptors the process has open.
func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestAbandonedCompletion: an open whose Submit returned before its
// completion (an io_uring_enter error after the kernel consumed the entry)
// must never have its result - a descriptor - taken by the next Submit,
// which may run for another tenant; the descriptor is closed instead.
func TestAbandonedCompletion(t *testing.T) {
	r := newRing(t)
	s := r.Scratch()
	copy(s.Path[0][:], "/\x00")
	s.How = unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC}
	// What Submit does up to the kernel consuming the entry.
	r.seq++
	seq := r.seq
	tail := *r.sqTail
	slot := (*SQE)(unsafe.Add(r.sqes, uintptr(tail&*r.sqMask)*unsafe.Sizeof(SQE{})))
	*slot = SQE{Opcode: OpOpenat2, Fd: unix.AT_FDCWD, Addr: uint64(uintptr(unsafe.Pointer(&s.Path[0][0]))),
		Off: uint64(uintptr(unsafe.Pointer(&s.How))), Len: uint32(unsafe.Sizeof(s.How)), UserData: seq}
	*r.sqTail = tail + 1
	if _, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 1, 1, enterGetEvents, 0, 0); e != 0 {
		t.Fatal(e)
	}
	r.abandon(seq, OpOpenat2)
	before := countFDs(t) // includes the abandoned open's descriptor
	res, err := r.Submit(&SQE{Opcode: OpNop})
	if err != nil || res != 0 {
		t.Fatalf("nop after an abandoned open = %d, %v; want 0 (the open's descriptor handed on?)", res, err)
	}
	if after := countFDs(t); after != before-1 {
		t.Errorf("descriptors %d -> %d: the abandoned open's descriptor was not closed", before, after)
	}
	if len(r.abandoned) != 0 {
		t.Errorf("abandoned = %v after its completion", r.abandoned)
	}
}
