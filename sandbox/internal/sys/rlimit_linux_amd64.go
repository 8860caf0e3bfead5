package sys

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// setChildRlimits makes the stopped tracee run prlimit64(0, resource, new,
// NULL) once per limit: it writes a syscall instruction over the one at the
// current instruction pointer and the rlimit struct below the stack pointer
// (both restored afterwards), sets the registers and single-steps.
func setChildRlimits(pid int, lims []Rlimit) (pending unix.Signal, err error) {
	var saved unix.PtraceRegs
	if err := unix.PtraceGetRegs(pid, &saved); err != nil {
		return 0, os.NewSyscallError("ptrace(PTRACE_GETREGS)", err)
	}
	if saved.Cs != 0x33 {
		// 0x23 is the 32-bit code segment: there the syscall
		// instruction does not enter the 64-bit system call table.
		return 0, fmt.Errorf("child %d is not a 64-bit program (cs %#x)", pid, saved.Cs)
	}
	pc := uintptr(saved.Rip)
	var text [8]byte
	if _, err := unix.PtracePeekText(pid, pc, text[:]); err != nil {
		return 0, os.NewSyscallError("ptrace(PTRACE_PEEKTEXT)", err)
	}
	patched := text
	patched[0], patched[1] = 0x0f, 0x05 // syscall
	if _, err := unix.PtracePokeText(pid, pc, patched[:]); err != nil {
		return 0, os.NewSyscallError("ptrace(PTRACE_POKETEXT)", err)
	}
	// Below the red zone: nothing lives there at the program's entry.
	scratch := uintptr(saved.Rsp-512) &^ 15
	var stack [16]byte
	if _, err := unix.PtracePeekData(pid, scratch, stack[:]); err != nil {
		return 0, os.NewSyscallError("ptrace(PTRACE_PEEKDATA)", err)
	}
	defer func() {
		// Put back what was there; a failure leaves a child that must
		// not run: the caller kills it on error.
		if _, e := unix.PtracePokeText(pid, pc, text[:]); e != nil && err == nil {
			err = os.NewSyscallError("ptrace(PTRACE_POKETEXT)", e)
		}
		if _, e := unix.PtracePokeData(pid, scratch, stack[:]); e != nil && err == nil {
			err = os.NewSyscallError("ptrace(PTRACE_POKEDATA)", e)
		}
		if e := unix.PtraceSetRegs(pid, &saved); e != nil && err == nil {
			err = os.NewSyscallError("ptrace(PTRACE_SETREGS)", e)
		}
	}()
	for _, l := range lims {
		var lim [16]byte
		binary.LittleEndian.PutUint64(lim[0:], l.Max)
		binary.LittleEndian.PutUint64(lim[8:], l.Max)
		if _, err := unix.PtracePokeData(pid, scratch, lim[:]); err != nil {
			return pending, os.NewSyscallError("ptrace(PTRACE_POKEDATA)", err)
		}
		r := saved
		r.Rip = saved.Rip
		r.Orig_rax = ^uint64(0) // not in a system call: no restart logic on resume
		r.Rax = unix.SYS_PRLIMIT64
		r.Rdi, r.Rsi, r.Rdx, r.R10 = 0, uint64(l.Resource), uint64(scratch), 0
		if err := unix.PtraceSetRegs(pid, &r); err != nil {
			return pending, os.NewSyscallError("ptrace(PTRACE_SETREGS)", err)
		}
		if err := stepUntilTrap(pid, &pending); err != nil {
			return pending, err
		}
		if err := unix.PtraceGetRegs(pid, &r); err != nil {
			return pending, os.NewSyscallError("ptrace(PTRACE_GETREGS)", err)
		}
		if ret := int64(r.Rax); ret != 0 {
			return pending, fmt.Errorf("child %d: prlimit64(resource %d): %w", pid, l.Resource, unix.Errno(-ret))
		}
	}
	return pending, nil
}
