//go:build linux

package sys

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The file operations of the sandbox's file gate when it runs them on the
// calling thread (with that thread's credentials). They can block, so they
// use Syscall, not RawSyscall; each retries EINTR. Errors are plain
// syscall.Errno values: the gate wraps them in *fs.PathError.

// maxAgain bounds the retries of an openat2 that the kernel refused with
// EAGAIN (a rename or mount raced with a RESOLVE_BENEATH lookup of "..").
const maxAgain = 8

// Openat2 opens path relative to dirfd with how.
func Openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	for again := 0; ; {
		r, _, e := unix.Syscall6(unix.SYS_OPENAT2, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
			uintptr(unsafe.Pointer(how)), unsafe.Sizeof(*how), 0, 0)
		switch {
		case e == 0:
			return int(r), nil
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN && again < maxAgain:
			again++
			continue
		}
		return -1, e
	}
}

// Openat opens path relative to dirfd with openat(2) (no RESOLVE_*
// restrictions: callers pass O_NOFOLLOW and check what they get).
func Openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, path, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// Unlinkat removes path relative to dirfd (a directory with
// unix.AT_REMOVEDIR in flags).
func Unlinkat(dirfd int, path string, flags int) error {
	return atCall(unix.SYS_UNLINKAT, dirfd, path, uintptr(flags))
}

// atCall issues a syscall(dirfd, path, arg), retrying EINTR.
func atCall(trap uintptr, dirfd int, path string, arg uintptr) error {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	for {
		_, _, e := unix.Syscall(trap, uintptr(dirfd), uintptr(unsafe.Pointer(p)), arg)
		if e != unix.EINTR {
			return errno(e)
		}
	}
}

// Renameat renames oldpath (relative to olddirfd) to newpath (relative to
// newdirfd).
func Renameat(olddirfd int, oldpath string, newdirfd int, newpath string) error {
	op, err := unix.BytePtrFromString(oldpath)
	if err != nil {
		return err
	}
	np, err := unix.BytePtrFromString(newpath)
	if err != nil {
		return err
	}
	for {
		_, _, e := unix.Syscall6(unix.SYS_RENAMEAT, uintptr(olddirfd), uintptr(unsafe.Pointer(op)),
			uintptr(newdirfd), uintptr(unsafe.Pointer(np)), 0, 0)
		if e != unix.EINTR {
			return errno(e)
		}
	}
}

// Mkdirat makes directory path relative to dirfd.
func Mkdirat(dirfd int, path string, mode uint32) error {
	return atCall(unix.SYS_MKDIRAT, dirfd, path, uintptr(mode))
}

// Fstat fills st for fd.
func Fstat(fd int, st *syscall.Stat_t) error {
	for {
		err := syscall.Fstat(fd, st)
		if err != syscall.EINTR {
			return err
		}
	}
}

// Close closes fd (EINTR is not retried: the descriptor is gone either
// way on Linux).
func Close(fd int) error { return unix.Close(fd) }

// errno returns e as an error, nil for 0.
func errno(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}
