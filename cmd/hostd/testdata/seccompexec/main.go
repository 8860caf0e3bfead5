// Command seccompexec runs a program under a seccomp filter that fails
// io_uring_setup with EPERM, as container runtimes' default profiles do,
// for the tests of hostd's io_uring fallback:
//
//	seccompexec PROGRAM [ARG...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: seccompexec PROGRAM [ARG...]")
		os.Exit(2)
	}
	if err := denyIOURing(); err != nil {
		fmt.Fprintln(os.Stderr, "seccompexec:", err)
		os.Exit(1)
	}
	prog, err := exec.LookPath(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "seccompexec:", err)
		os.Exit(1)
	}
	err = syscall.Exec(prog, os.Args[1:], os.Environ())
	fmt.Fprintln(os.Stderr, "seccompexec: exec:", err)
	os.Exit(1)
}

// denyIOURing installs, on every thread, a filter returning EPERM for
// io_uring_setup and allowing everything else.
func denyIOURing() error {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	default:
		return fmt.Errorf("unsupported architecture %s", runtime.GOARCH)
	}
	const (
		ldAbsW   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeqK     = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		retK     = unix.BPF_RET | unix.BPF_K
		retAllow = 0x7fff0000 // SECCOMP_RET_ALLOW
		retErrno = 0x00050000 // SECCOMP_RET_ERRNO
	)
	filter := []unix.SockFilter{
		{Code: ldAbsW, K: 4}, // seccomp_data.arch
		{Code: jeqK, Jt: 0, Jf: 3, K: arch},
		{Code: ldAbsW, K: 0}, // seccomp_data.nr
		{Code: jeqK, Jt: 0, Jf: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: retK, K: retErrno | uint32(unix.EPERM)},
		{Code: retK, K: retAllow},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if os.Geteuid() != 0 {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no_new_privs: %w", err)
		}
	}
	const setModeFilter, flagTsync = 1, 1
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, setModeFilter, flagTsync, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	runtime.KeepAlive(filter)
	if _, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0); e != unix.EPERM {
		return fmt.Errorf("io_uring_setup under the filter: %v, want EPERM", e)
	}
	return nil
}
