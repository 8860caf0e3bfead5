//go:build linux

package uring

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Opcodes (enum io_uring_op in linux/io_uring.h) the sandbox uses.
const (
	OpNop      = 0
	OpOpenat2  = 28
	OpRenameat = 35
	OpUnlinkat = 36
	OpMkdirat  = 37
)

// Ops are the opcodes a Ring accepts: New restricts the ring to them
// (IORING_REGISTER_RESTRICTIONS), and Probe reports whether the kernel has
// them.
var Ops = []uint8{OpNop, OpOpenat2, OpRenameat, OpUnlinkat, OpMkdirat}

// OpName names an opcode for error messages.
func OpName(op uint8) string {
	switch op {
	case OpNop:
		return "NOP"
	case OpOpenat2:
		return "OPENAT2"
	case OpRenameat:
		return "RENAMEAT"
	case OpUnlinkat:
		return "UNLINKAT"
	case OpMkdirat:
		return "MKDIRAT"
	}
	return fmt.Sprintf("op %d", op)
}

// io_uring_setup flags, io_uring_enter flags, io_uring_register opcodes and
// mmap offsets.
const (
	setupRDisabled = 1 << 6 // IORING_SETUP_R_DISABLED (5.10)
	setupClamp     = 1 << 4 // IORING_SETUP_CLAMP

	enterGetEvents = 1 << 0 // IORING_ENTER_GETEVENTS

	registerProbe                     = 8
	registerPersonality               = 9
	unregisterPersonality             = 10
	registerRestrictions              = 11
	registerEnableRings               = 12
	restrictionRegisterOp             = 0
	restrictionSQEOp                  = 1
	restrictionSQEFlagsAllowed        = 2
	probeOpSupported           uint16 = 1

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	featSingleMmap = 1 << 0
)

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// SQE is struct io_uring_sqe (64 bytes), with the fields the sandbox's
// operations use.
type SQE struct {
	Opcode      uint8
	Flags       uint8
	Ioprio      uint16
	Fd          int32
	Off         uint64 // also addr2
	Addr        uint64
	Len         uint32
	OpFlags     uint32 // open_flags, unlink_flags, rename_flags ...
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	FileIndex   int32 // also splice_fd_in
	Addr3       uint64
	pad         uint64
}

// cqe is struct io_uring_cqe.
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

type restriction struct {
	opcode uint16
	arg    uint8 // register_op, sqe_op or sqe_flags
	resv   uint8
	resv2  [3]uint32
}

type probeOp struct {
	op    uint8
	resv  uint8
	flags uint16
	resv2 uint32
}

type probe struct {
	lastOp uint8
	opsLen uint8
	resv   uint16
	resv2  [3]uint32
	ops    [256]probeOp
}

// Errors.
var (
	// ErrUnsupported is returned on systems without io_uring support in
	// this package.
	ErrUnsupported = errors.New("uring: io_uring needs linux")
	// ErrClosed is returned by operations on a closed Ring.
	ErrClosed = errors.New("uring: ring closed")
)

// Ring is one io_uring instance used for one synchronous operation at a
// time. It is not safe for concurrent use: its owner serialises access
// (the sandbox keeps a pool of rings, each behind a mutex). Close releases
// it.
type Ring struct {
	fd int

	sqRing, cqRing, sqesMem []byte

	sqHead, sqTail, sqMask *uint32
	cqHead, cqTail, cqMask *uint32
	sqes                   unsafe.Pointer
	cqes                   unsafe.Pointer

	// seq tags each submission (the SQE's user_data), so a completion is
	// only ever taken by the Submit that made it; abandoned lists the
	// tags of submissions whose Submit returned before their completion
	// (an io_uring_enter error after the kernel consumed the entry), with
	// their opcodes: their completions are discarded when they arrive, and
	// a descriptor one of them opened is closed - never handed to a later
	// operation, which may be another tenant's.
	seq       uint64
	abandoned map[uint64]uint8

	// Scratch memory the kernel reads during Submit (paths, open_how):
	// owned by the ring so that no operation allocates, and on the heap
	// so that no stack move can invalidate a pointer an SQE carries.
	scratch *Scratch
}

// Scratch holds an operation's arguments while it is submitted: two
// NUL-terminated paths, an open_how and the SQE itself.
type Scratch struct {
	Path [2][unix.PathMax + 1]byte
	How  unix.OpenHow
	SQE  SQE
}

// New sets up a ring with room for entries submissions, restricted to Ops
// and to the register operations the sandbox needs (probe and
// personalities).
func New(entries uint32) (*Ring, error) {
	p := params{flags: setupRDisabled | setupClamp}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, os.NewSyscallError("io_uring_setup", e)
	}
	r := &Ring{fd: int(fd), scratch: new(Scratch)}
	if err := r.mmap(&p); err != nil {
		r.Close()
		return nil, err
	}
	if err := r.restrict(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Ring) mmap(p *params) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(cqe{})))
	if p.features&featSingleMmap != 0 {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	r.sqRing, err = unix.Mmap(r.fd, offSQRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("uring: mmap sq ring: %w", err)
	}
	if p.features&featSingleMmap != 0 {
		r.cqRing = r.sqRing
	} else if r.cqRing, err = unix.Mmap(r.fd, offCQRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("uring: mmap cq ring: %w", err)
	}
	r.sqesMem, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(SQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("uring: mmap sqes: %w", err)
	}
	sq := unsafe.Pointer(unsafe.SliceData(r.sqRing))
	cq := unsafe.Pointer(unsafe.SliceData(r.cqRing))
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqMask = (*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	r.cqHead = (*uint32)(unsafe.Add(cq, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.cqOff.tail))
	r.cqMask = (*uint32)(unsafe.Add(cq, p.cqOff.ringMask))
	r.cqes = unsafe.Add(cq, p.cqOff.cqes)
	r.sqes = unsafe.Pointer(unsafe.SliceData(r.sqesMem))
	// The SQ array maps ring slots to SQE indexes: identity, set once.
	array := unsafe.Slice((*uint32)(unsafe.Add(sq, p.sqOff.array)), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	return nil
}

// restrict allows only Ops and the probe and personality register
// operations, then enables the ring (it was set up disabled).
func (r *Ring) restrict() error {
	var rs []restriction
	for _, op := range []uint8{registerProbe, registerPersonality, unregisterPersonality} {
		rs = append(rs, restriction{opcode: restrictionRegisterOp, arg: op})
	}
	for _, op := range Ops {
		rs = append(rs, restriction{opcode: restrictionSQEOp, arg: op})
	}
	// No SQE flag is allowed (no fixed files, links or async forcing).
	rs = append(rs, restriction{opcode: restrictionSQEFlagsAllowed, arg: 0})
	if _, err := r.register(registerRestrictions, unsafe.Pointer(&rs[0]), uintptr(len(rs))); err != nil {
		return fmt.Errorf("uring: register restrictions: %w", err)
	}
	if _, err := r.register(registerEnableRings, nil, 0); err != nil {
		return fmt.Errorf("uring: enable ring: %w", err)
	}
	return nil
}

func (r *Ring) register(op uintptr, arg unsafe.Pointer, n uintptr) (int, error) {
	if r.fd < 0 {
		return 0, ErrClosed
	}
	for {
		v, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), op, uintptr(arg), n, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, os.NewSyscallError("io_uring_register", e)
		}
		return int(v), nil
	}
}

// FD returns the ring's file descriptor (for /proc/self/fdinfo).
func (r *Ring) FD() int { return r.fd }

// Scratch returns the ring's argument memory for the next Submit.
func (r *Ring) Scratch() *Scratch { return r.scratch }

// Probe reports which of ops the kernel supports on this ring; missing
// lists the unsupported ones.
func (r *Ring) Probe(ops []uint8) (missing []uint8, err error) {
	var p probe
	if _, err := r.register(registerProbe, unsafe.Pointer(&p), uintptr(len(p.ops))); err != nil {
		return nil, fmt.Errorf("uring: probe: %w", err)
	}
	for _, op := range ops {
		if int(op) > int(p.lastOp) || p.ops[op].flags&probeOpSupported == 0 {
			missing = append(missing, op)
		}
	}
	return missing, nil
}

// RegisterPersonality registers the calling thread's credentials with the
// ring and returns their id (never 0). The caller must be locked to its
// thread, whose credentials are the ones registered.
func (r *Ring) RegisterPersonality() (uint16, error) {
	id, err := r.register(registerPersonality, nil, 0)
	if err != nil {
		return 0, fmt.Errorf("uring: register personality: %w", err)
	}
	return uint16(id), nil
}

// UnregisterPersonality drops personality id from the ring.
func (r *Ring) UnregisterPersonality(id uint16) error {
	if _, err := r.register(unregisterPersonality, nil, uintptr(id)); err != nil {
		return fmt.Errorf("uring: unregister personality %d: %w", id, err)
	}
	return nil
}

// maxSubmitTries bounds the io_uring_enter calls that may leave a new entry
// unconsumed before Submit gives up.
const maxSubmitTries = 100

// Submit submits sqe, waits for its completion and returns the result: a
// non-negative value, or the operation's errno. Pointers in sqe must stay
// valid until Submit returns (Scratch memory does).
func (r *Ring) Submit(sqe *SQE) (int32, error) {
	if r.fd < 0 {
		return 0, ErrClosed
	}
	tail := atomic.LoadUint32(r.sqTail)
	head := atomic.LoadUint32(r.sqHead)
	if tail != head {
		// One operation at a time: a left-over entry means an earlier
		// Submit failed before the kernel consumed it.
		return 0, errors.New("uring: submission queue not empty")
	}
	r.seq++
	seq := r.seq
	slot := (*SQE)(unsafe.Add(r.sqes, uintptr(tail&*r.sqMask)*unsafe.Sizeof(SQE{})))
	*slot = *sqe
	slot.UserData = seq
	atomic.StoreUint32(r.sqTail, tail+1)
	submitted := false
	for tries := 0; ; tries++ {
		if !submitted && tries >= maxSubmitTries {
			// The kernel keeps refusing the entry (out of memory):
			// take it back rather than spin.
			if atomic.LoadUint32(r.sqHead) == head {
				atomic.StoreUint32(r.sqTail, tail)
				return 0, os.NewSyscallError("io_uring_enter", unix.EAGAIN)
			}
			submitted = true
		}
		// First submit without waiting: an operation that completes
		// inline (a cached lookup) has its completion posted by then, and
		// the wait path costs more than a second call when it did not.
		toSubmit, minComplete, flags := uintptr(1), uintptr(0), uintptr(0)
		if submitted {
			toSubmit, minComplete, flags = 0, 1, enterGetEvents
		}
		n, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), toSubmit, minComplete, flags, 0, 0)
		if e == 0 && !submitted && n == 1 {
			submitted = true
		}
		if res, ok := r.reap(seq); ok {
			return res, nil
		}
		switch {
		case e == unix.EINTR || e == unix.EAGAIN || e == unix.EBUSY:
			// Interrupted (Go preempts with signals) or short of
			// resources: the entry may or may not be consumed; the
			// head tells.
			if !submitted && atomic.LoadUint32(r.sqHead) != head {
				submitted = true
			}
			continue
		case e != 0:
			if !submitted && atomic.LoadUint32(r.sqHead) == head {
				// Not consumed: take it back.
				atomic.StoreUint32(r.sqTail, tail)
			} else {
				r.abandon(seq, sqe.Opcode)
			}
			return 0, os.NewSyscallError("io_uring_enter", e)
		}
		if !submitted && atomic.LoadUint32(r.sqHead) != head {
			submitted = true
		}
	}
}

// abandon records that the submission tagged seq, an op operation, was
// consumed by the kernel but its Submit returned without its completion.
func (r *Ring) abandon(seq uint64, op uint8) {
	if r.abandoned == nil {
		r.abandoned = make(map[uint64]uint8)
	}
	r.abandoned[seq] = op
}

// reap takes the completion tagged seq, if it has arrived, discarding
// those of abandoned submissions on the way (closing what they opened).
func (r *Ring) reap(seq uint64) (int32, bool) {
	for {
		head := atomic.LoadUint32(r.cqHead)
		if head == atomic.LoadUint32(r.cqTail) {
			return 0, false
		}
		c := (*cqe)(unsafe.Add(r.cqes, uintptr(head&*r.cqMask)*unsafe.Sizeof(cqe{})))
		tag, res := c.userData, c.res
		atomic.StoreUint32(r.cqHead, head+1)
		if tag == seq {
			return res, true
		}
		if op, ok := r.abandoned[tag]; ok {
			delete(r.abandoned, tag)
			if op == OpOpenat2 && res >= 0 {
				unix.Close(int(res))
			}
		}
	}
}

// Close unmaps and closes the ring; the kernel drops its personalities.
func (r *Ring) Close() error {
	if r.fd < 0 {
		return nil
	}
	if r.sqesMem != nil {
		unix.Munmap(r.sqesMem)
	}
	if r.cqRing != nil && (r.sqRing == nil || unsafe.SliceData(r.cqRing) != unsafe.SliceData(r.sqRing)) {
		unix.Munmap(r.cqRing)
	}
	if r.sqRing != nil {
		unix.Munmap(r.sqRing)
	}
	err := unix.Close(r.fd)
	r.fd = -1
	r.sqRing, r.cqRing, r.sqesMem = nil, nil, nil
	return err
}
