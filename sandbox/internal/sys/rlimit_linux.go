package sys

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Rlimit is one resource limit to set in a child: Resource is a
// unix.RLIMIT_* number; the soft and hard limits are both set to Max.
type Rlimit struct {
	Resource int
	Max      uint64
}

// ErrInjectUnsupported is returned by SetChildRlimits on architectures
// whose registers it does not know.
var ErrInjectUnsupported = errors.New("setting a child's limits at exec is not implemented on this architecture")

// wall is __WALL: wait for any child, clone or traced.
const wall = 0x40000000

// WaitTraceStop waits until the traced child pid stops and returns the
// signal that stopped it, without consuming a state change a later
// exec.Cmd.Wait needs: it peeks with WNOWAIT, so when the child exited
// instead, exited is true and the exit status stays for Wait.
func WaitTraceStop(pid int) (sig unix.Signal, exited bool, err error) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WEXITED|unix.WNOWAIT|wall, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, false, os.NewSyscallError("waitid", err)
		}
		// siginfo for SIGCHLD: si_code CLD_*, si_status the signal or
		// exit code (after si_pid and si_uid in the union).
		code := info.Code
		status := int32(siginfoStatus(&info))
		switch code {
		case cldTrapped, cldStopped:
			return unix.Signal(status), false, nil
		default:
			return 0, true, nil
		}
	}
}

const (
	cldTrapped = 4 // CLD_TRAPPED
	cldStopped = 5 // CLD_STOPPED
)

// SetChildRlimits sets lims in the traced child pid, which must be in a
// ptrace stop (after PTRACE_TRACEME and execve: before it ran a single
// instruction of the new program). The child itself calls prlimit64 on
// itself, made to by the tracer: lowering one's own limits needs no
// privilege, whereas prlimit on another process needs CAP_SYS_RESOURCE or
// the same real ids. Signals that arrive meanwhile are returned, to be
// delivered at detach. The child's registers and memory are restored.
func SetChildRlimits(pid int, lims []Rlimit) (pending unix.Signal, err error) {
	return setChildRlimits(pid, lims)
}

// stepUntilTrap resumes pid for one instruction and waits for the trap,
// remembering any other signal that stops it meanwhile (the step is then
// retried).
func stepUntilTrap(pid int, pending *unix.Signal) error {
	for range 16 {
		if err := unix.PtraceSingleStep(pid); err != nil {
			return os.NewSyscallError("ptrace(PTRACE_SINGLESTEP)", err)
		}
		sig, exited, err := WaitTraceStop(pid)
		switch {
		case err != nil:
			return err
		case exited:
			return fmt.Errorf("child %d exited while its limits were set", pid)
		case sig == unix.SIGTRAP:
			return nil
		}
		*pending = sig
	}
	return fmt.Errorf("child %d keeps being signalled while its limits are set", pid)
}

// sigchldInfo is the start of a siginfo_t for SIGCHLD on Linux.
type sigchldInfo struct {
	Signo, Errno, Code, _ int32
	Pid                   int32
	UID                   uint32
	Status                int32
}

func siginfoStatus(info *unix.Siginfo) int32 {
	return (*sigchldInfo)(unsafe.Pointer(info)).Status
}

// PtraceDetach detaches from the stopped tracee pid, which resumes with sig
// delivered (0: none).
func PtraceDetach(pid int, sig unix.Signal) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(pid), 0, uintptr(sig), 0, 0)
	return errnoErr("ptrace(PTRACE_DETACH)", e)
}
