//go:build linux

package sys

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Unchanged is passed for an id that setresuid/setresgid must leave as is.
const Unchanged = -1

// raw issues a thread-scoped raw syscall, retrying EINTR.
func raw(trap, a1, a2, a3 uintptr) (uintptr, unix.Errno) {
	for {
		r, _, e := unix.RawSyscall(trap, a1, a2, a3)
		if e != unix.EINTR {
			return r, e
		}
	}
}

func errnoErr(name string, e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return os.NewSyscallError(name, e)
}

// Setgroups sets the calling thread's supplementary groups. An empty list
// clears them. Requires CAP_SETGID in the thread's effective set.
func Setgroups(gids []uint32) error {
	var p unsafe.Pointer
	if len(gids) > 0 {
		p = unsafe.Pointer(&gids[0])
	}
	_, e := raw(sysSetgroups, uintptr(len(gids)), uintptr(p), 0)
	return errnoErr("setgroups", e)
}

// Getgroups appends the calling thread's supplementary groups to buf[:0] and
// returns it; buf is grown when too small.
func Getgroups(buf []uint32) ([]uint32, error) {
	for {
		n, e := raw(sysGetgroups, 0, 0, 0)
		if e != 0 {
			return buf[:0], errnoErr("getgroups", e)
		}
		if int(n) > cap(buf) {
			buf = make([]uint32, n)
		}
		buf = buf[:cap(buf)]
		if len(buf) == 0 {
			return buf, nil
		}
		m, e := raw(sysGetgroups, uintptr(len(buf)), uintptr(unsafe.Pointer(&buf[0])), 0)
		if e == unix.EINVAL {
			continue // the list grew between the two calls
		}
		if e != 0 {
			return buf[:0], errnoErr("getgroups", e)
		}
		return buf[:m], nil
	}
}

// Setresuid sets the calling thread's real, effective and saved user ids;
// Unchanged leaves one as is.
func Setresuid(r, e, s int) error {
	_, en := raw(sysSetresuid, uintptr(r), uintptr(e), uintptr(s))
	return errnoErr("setresuid", en)
}

// Setresgid sets the calling thread's real, effective and saved group ids;
// Unchanged leaves one as is.
func Setresgid(r, e, s int) error {
	_, en := raw(sysSetresgid, uintptr(r), uintptr(e), uintptr(s))
	return errnoErr("setresgid", en)
}

// Getresuid returns the calling thread's real, effective and saved user ids.
func Getresuid() (r, e, s uint32, err error) {
	_, en := raw(sysGetresuid, uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&e)), uintptr(unsafe.Pointer(&s)))
	return r, e, s, errnoErr("getresuid", en)
}

// Getresgid returns the calling thread's real, effective and saved group ids.
func Getresgid() (r, e, s uint32, err error) {
	_, en := raw(sysGetresgid, uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&e)), uintptr(unsafe.Pointer(&s)))
	return r, e, s, errnoErr("getresgid", en)
}

// Caps is a thread's capability sets as 64-bit masks (bit n = capability n).
type Caps struct {
	Effective, Permitted, Inheritable uint64
}

// Has reports whether every bit of mask is set in set.
func Has(set, mask uint64) bool { return set&mask == mask }

// Mask returns the bit for capability c.
func Mask(c uintptr) uint64 { return 1 << c }

const capVersion3 = unix.LINUX_CAPABILITY_VERSION_3

// Capget returns the calling thread's capability sets.
func Capget() (Caps, error) {
	hdr := unix.CapUserHeader{Version: capVersion3}
	var d [2]unix.CapUserData
	_, e := raw(unix.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&d[0])), 0)
	if e != 0 {
		return Caps{}, errnoErr("capget", e)
	}
	return Caps{
		Effective:   uint64(d[0].Effective) | uint64(d[1].Effective)<<32,
		Permitted:   uint64(d[0].Permitted) | uint64(d[1].Permitted)<<32,
		Inheritable: uint64(d[0].Inheritable) | uint64(d[1].Inheritable)<<32,
	}, nil
}

func capData(c Caps) [2]unix.CapUserData {
	return [2]unix.CapUserData{
		{Effective: uint32(c.Effective), Permitted: uint32(c.Permitted), Inheritable: uint32(c.Inheritable)},
		{Effective: uint32(c.Effective >> 32), Permitted: uint32(c.Permitted >> 32), Inheritable: uint32(c.Inheritable >> 32)},
	}
}

// Capset sets the calling thread's capability sets (pid 0 = this thread).
// Raising an effective capability needs it in the permitted set.
func Capset(c Caps) error {
	hdr := unix.CapUserHeader{Version: capVersion3}
	d := capData(c)
	_, e := raw(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&d[0])), 0)
	return errnoErr("capset", e)
}

// SetNoNewPrivs sets PR_SET_NO_NEW_PRIVS on the calling thread (irreversible;
// inherited by threads and processes it creates).
func SetNoNewPrivs() error {
	_, e := raw(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0)
	return errnoErr("prctl(PR_SET_NO_NEW_PRIVS)", e)
}

// NoNewPrivs reports the calling thread's no_new_privs bit.
func NoNewPrivs() (bool, error) {
	r, e := raw(unix.SYS_PRCTL, unix.PR_GET_NO_NEW_PRIVS, 0, 0)
	return r == 1, errnoErr("prctl(PR_GET_NO_NEW_PRIVS)", e)
}

// Gettid returns the calling thread's id.
func Gettid() int {
	r, _ := raw(unix.SYS_GETTID, 0, 0, 0)
	return int(r)
}

// Tgkill sends sig to thread tid of thread group tgid.
func Tgkill(tgid, tid int, sig syscall.Signal) error {
	_, e := raw(unix.SYS_TGKILL, uintptr(tgid), uintptr(tid), uintptr(sig))
	return errnoErr("tgkill", e)
}

// CapLastCap returns the highest capability number the kernel knows.
func CapLastCap() (uintptr, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, err
	}
	var n uintptr
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + uintptr(c-'0')
	}
	return n, nil
}

func allThreads(name string, trap, a1, a2, a3 uintptr) error {
	for {
		_, _, e := syscall.AllThreadsSyscall(trap, a1, a2, a3)
		if e == syscall.EINTR {
			continue
		}
		if e == 0 {
			return nil
		}
		return os.NewSyscallError(name+" on all threads", e)
	}
}

// AllThreadsPrctl runs prctl(op, arg2, arg3) on every thread of the process.
// It fails with ENOTSUP in cgo builds, where the runtime cannot do that.
func AllThreadsPrctl(name string, op, arg2, arg3 uintptr) error {
	return allThreads(name, unix.SYS_PRCTL, op, arg2, arg3)
}

// AllThreadsCapset sets the capability sets of every thread of the process.
// It fails with ENOTSUP in cgo builds.
func AllThreadsCapset(c Caps) error {
	hdr := unix.CapUserHeader{Version: capVersion3}
	d := capData(c)
	err := allThreads("capset", unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&d[0])), 0)
	// AllThreadsSyscall is not an assembly function: keep the arguments
	// alive explicitly until every thread has run the call.
	runtime.KeepAlive(&hdr)
	runtime.KeepAlive(&d)
	return err
}
