package sys

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// scratchBelow is how far below the stack pointer the rlimit structs go:
// past the red zone, in stack the program has not used yet (it is stopped
// at its entry point).
const scratchBelow = 512

// setChildRlimits makes the stopped tracee run prlimit64(0, resource, new,
// NULL) once per limit: it writes the rlimit structs below the stack
// pointer and a syscall instruction over the one at the instruction pointer
// (the entry point: the dynamic loader's or the program's), then for each
// limit sets the registers and single-steps. Text, stack and registers are
// put back. (Running all the calls as one injected program with a single
// resume cost as much CPU on the test machine, the per-word text writes of
// PTRACE_POKETEXT eating the saved context switches.)
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
	scratch := uintptr(saved.Rsp-scratchBelow)&^15 - uintptr(16*len(lims))
	stack := make([]byte, 16*len(lims))
	if _, err := unix.PtracePeekData(pid, scratch, stack); err != nil {
		return 0, os.NewSyscallError("ptrace(PTRACE_PEEKDATA)", err)
	}
	var text [2]byte
	if _, err := unix.PtracePeekText(pid, pc, text[:]); err != nil {
		return 0, os.NewSyscallError("ptrace(PTRACE_PEEKTEXT)", err)
	}
	data := make([]byte, 0, len(stack))
	for _, l := range lims {
		data = binary.LittleEndian.AppendUint64(data, l.Max) // rlim_cur
		data = binary.LittleEndian.AppendUint64(data, l.Max) // rlim_max
	}
	defer func() {
		// Put everything back; a failure leaves a child that must not
		// run: the caller kills it on error.
		if _, e := unix.PtracePokeText(pid, pc, text[:]); e != nil && err == nil {
			err = os.NewSyscallError("ptrace(PTRACE_POKETEXT)", e)
		}
		if _, e := unix.PtracePokeData(pid, scratch, stack); e != nil && err == nil {
			err = os.NewSyscallError("ptrace(PTRACE_POKEDATA)", e)
		}
		if e := unix.PtraceSetRegs(pid, &saved); e != nil && err == nil {
			err = os.NewSyscallError("ptrace(PTRACE_SETREGS)", e)
		}
	}()
	if _, err := unix.PtracePokeData(pid, scratch, data); err != nil {
		return 0, os.NewSyscallError("ptrace(PTRACE_POKEDATA)", err)
	}
	if _, err := unix.PtracePokeText(pid, pc, []byte{0x0f, 0x05}); err != nil { // syscall
		return 0, os.NewSyscallError("ptrace(PTRACE_POKETEXT)", err)
	}
	for i, l := range lims {
		r := saved
		r.Orig_rax = ^uint64(0) // not in a system call: no restart logic on resume
		r.Rax = unix.SYS_PRLIMIT64
		r.Rdi, r.Rsi, r.Rdx, r.R10 = 0, uint64(l.Resource), uint64(scratch)+uint64(16*i), 0
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
