//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/sandbox/internal/uring"
)

// Rings is the server's pool of io_uring rings through which the file
// gates of ModeUring tenants submit their operations, each naming the
// tenant's personality (its credentials, registered once per ring when the
// Tenant is made). A Rings is shared by every ModeUring tenant of a server
// and is safe for concurrent use; each ring serves one operation at a time.
type Rings struct {
	slots []*ringSlot
	// personalities counts the tenants registered (one personality on
	// every ring each).
	personalities atomic.Int64
}

type ringSlot struct {
	mu sync.Mutex
	r  *uring.Ring
}

// NewRings sets up n rings (n <= 0: runtime.GOMAXPROCS). It fails, naming
// the cause, when io_uring is unavailable or lacks an operation the gate
// needs; see ProbeURing.
func NewRings(n int) (*Rings, error) {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	p := &Rings{}
	for range n {
		r, err := uring.New(2)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("sandbox: io_uring: %w%s", err, uringHint(err))
		}
		p.slots = append(p.slots, &ringSlot{r: r})
	}
	missing, err := p.slots[0].r.Probe(uring.Ops)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("sandbox: io_uring: %w", err)
	}
	if len(missing) > 0 {
		p.Close()
		names := make([]string, len(missing))
		for i, op := range missing {
			names[i] = uring.OpName(op)
		}
		return nil, fmt.Errorf("sandbox: io_uring lacks %s (the file gate needs Linux 5.15 or later)", strings.Join(names, ", "))
	}
	return p, nil
}

// uringHint explains why io_uring_setup failed.
func uringHint(err error) string {
	switch {
	case errors.Is(err, unix.ENOSYS):
		return " (the kernel has no io_uring; mode uring needs Linux 5.15 or later)"
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		switch disabled := readSysctl("/proc/sys/kernel/io_uring_disabled"); disabled {
		case "2":
			return " (disabled by sysctl kernel.io_uring_disabled=2)"
		case "1":
			return " (sysctl kernel.io_uring_disabled=1 allows it only to members of kernel.io_uring_group)"
		default:
			return " (refused, most likely by a seccomp filter such as a container runtime's default profile)"
		}
	}
	return ""
}

// Personalities returns how many tenants have a personality registered on
// the rings now (each on every ring).
func (p *Rings) Personalities() int { return int(p.personalities.Load()) }

// Len returns the number of rings.
func (p *Rings) Len() int { return len(p.slots) }

// Close closes the rings; the kernel drops every personality registered on
// them. Tenants still using the rings get errors.
func (p *Rings) Close() {
	for _, s := range p.slots {
		s.mu.Lock()
		s.r.Close()
		s.mu.Unlock()
	}
}

// acquire locks a free ring (or waits for one) and returns it and its
// index.
func (p *Rings) acquire() (*ringSlot, int) {
	n := len(p.slots)
	start := rand.IntN(n)
	for k := range n {
		i := start + k
		if i >= n {
			i -= n
		}
		if p.slots[i].mu.TryLock() {
			return p.slots[i], i
		}
	}
	p.slots[start].mu.Lock()
	return p.slots[start], start
}

// RegisteredOnRings counts, by asking the kernel, the personality ids from 1
// to upTo that are registered on every ring (a NOP naming an unregistered
// personality fails with EINVAL). It is a test and debugging aid: the
// kernel's count, against Personalities' own.
func (p *Rings) RegisteredOnRings(upTo int) (int, error) {
	counts := make(map[uint16]int)
	for _, s := range p.slots {
		s.mu.Lock()
		for id := 1; id <= upTo && id <= 0xffff; id++ {
			res, err := s.r.Submit(&uring.SQE{Opcode: uring.OpNop, Personality: uint16(id)})
			if err != nil {
				s.mu.Unlock()
				return 0, err
			}
			if res == 0 {
				counts[uint16(id)]++
			}
		}
		s.mu.Unlock()
	}
	n := 0
	for _, c := range counts {
		if c > 0 {
			n++
		}
	}
	return n, nil
}

// personality is one tenant's credentials registered on every ring.
type personality struct {
	rings *Rings
	ids   []uint16 // by ring index

	// mu is held for reading by every operation, for writing by close:
	// no operation can name an id after it was unregistered (ids are
	// reused for other tenants' credentials).
	mu     sync.RWMutex
	closed bool
}

// registerPersonality registers id's credentials on every ring, from a
// fresh locked thread switched to id (groups, gid, euid, no effective
// capabilities, no_new_privs) and verified; the thread is destroyed
// afterwards, never returned to the scheduler.
func (p *Rings) registerPersonality(id *Identity) (*personality, error) {
	pers := &personality{rings: p, ids: make([]uint16, len(p.slots))}
	done := make(chan error, 1)
	var register func()
	register = func() {
		runtime.LockOSThread()
		if onMainThread() {
			// Never switch the main thread: park it and retry on
			// another one.
			go register()
			select {}
		}
		// This goroutine ends without unlocking its thread, so Go
		// destroys the thread with the tenant's credentials.
		th, err := enterTenant(id)
		if err != nil {
			done <- err
			return
		}
		if err := th.verifyTenant(); err != nil {
			done <- err
			return
		}
		for i, s := range p.slots {
			s.mu.Lock()
			pid, err := s.r.RegisterPersonality()
			s.mu.Unlock()
			if err != nil {
				pers.unregister(i)
				done <- err
				return
			}
			pers.ids[i] = pid
		}
		done <- nil
	}
	go register()
	if err := <-done; err != nil {
		return nil, fmt.Errorf("sandbox: register io_uring personality for uid %d gid %d: %w", id.UID, id.GID, err)
	}
	p.personalities.Add(1)
	return pers, nil
}

// unregister drops the ids of the first n rings.
func (pers *personality) unregister(n int) error {
	var errs []error
	for i, s := range pers.rings.slots[:n] {
		s.mu.Lock()
		if err := s.r.UnregisterPersonality(pers.ids[i]); err != nil && !errors.Is(err, uring.ErrClosed) {
			errs = append(errs, err)
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// close unregisters the personality once no operation uses it.
func (pers *personality) close() error {
	pers.mu.Lock()
	defer pers.mu.Unlock()
	if pers.closed {
		return nil
	}
	pers.closed = true
	pers.rings.personalities.Add(-1)
	return pers.unregister(len(pers.ids))
}

// beneath is how every gate lookup resolves. RESOLVE_NO_XDEV keeps it off
// mount points below the root: a tenant able to mount (FUSE through
// fusermount) could otherwise make a lookup block for good - in ModeUring
// holding a ring the other tenants share.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// setPath copies path into scratch slot i as a C string.
func setPath(s *uring.Scratch, i int, path string) (uint64, error) {
	if len(path) >= len(s.Path[i]) {
		return 0, unix.ENAMETOOLONG
	}
	n := copy(s.Path[i][:], path)
	s.Path[i][n] = 0
	return uint64(uintptr(unsafe.Pointer(&s.Path[i][0]))), nil
}

// submit runs sqe (whose pointers lead into the acquired ring's scratch
// memory, filled by prep) with the tenant's personality.
func (pers *personality) submit(prep func(s *uring.Scratch, sqe *uring.SQE) error) (int32, error) {
	pers.mu.RLock()
	defer pers.mu.RUnlock()
	if pers.closed {
		return 0, ErrFSClosed
	}
	slot, i := pers.rings.acquire()
	defer slot.mu.Unlock()
	s := slot.r.Scratch()
	sqe := &s.SQE // ring memory: no allocation per operation
	*sqe = uring.SQE{}
	if err := prep(s, sqe); err != nil {
		return 0, err
	}
	sqe.Personality = pers.ids[i]
	for again := 0; ; again++ {
		res, err := slot.r.Submit(sqe)
		if err != nil {
			return 0, err
		}
		if res >= 0 {
			return res, nil
		}
		e := unix.Errno(-res)
		if (e == unix.EINTR || e == unix.EAGAIN) && again < 8 {
			continue
		}
		return 0, e
	}
}

// uringBackend runs the gate's operations through the rings with a
// tenant's personality.
type uringBackend struct{ p *personality }

func (b uringBackend) open(dirfd int, path string, flags int, mode uint32) (int, error) {
	res, err := b.p.submit(func(s *uring.Scratch, sqe *uring.SQE) error {
		addr, err := setPath(s, 0, path)
		if err != nil {
			return err
		}
		s.How = unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: beneath}
		*sqe = uring.SQE{Opcode: uring.OpOpenat2, Fd: int32(dirfd), Addr: addr,
			Off: uint64(uintptr(unsafe.Pointer(&s.How))), Len: uint32(unsafe.Sizeof(s.How))}
		return nil
	})
	return int(res), err
}

func (b uringBackend) unlink(dirfd int, path string, flags int) error {
	return b.pathOp(uring.OpUnlinkat, dirfd, path, 0, uint32(flags))
}

// pathOp submits op on path relative to dirfd, with the SQE's len and op
// flags fields.
func (b uringBackend) pathOp(op uint8, dirfd int, path string, length, opFlags uint32) error {
	_, err := b.p.submit(func(s *uring.Scratch, sqe *uring.SQE) error {
		addr, err := setPath(s, 0, path)
		if err != nil {
			return err
		}
		*sqe = uring.SQE{Opcode: op, Fd: int32(dirfd), Addr: addr, Len: length, OpFlags: opFlags}
		return nil
	})
	return err
}

func (b uringBackend) rename(olddirfd int, oldpath string, newdirfd int, newpath string) error {
	_, err := b.p.submit(func(s *uring.Scratch, sqe *uring.SQE) error {
		oldAddr, err := setPath(s, 0, oldpath)
		if err != nil {
			return err
		}
		newAddr, err := setPath(s, 1, newpath)
		if err != nil {
			return err
		}
		*sqe = uring.SQE{Opcode: uring.OpRenameat, Fd: int32(olddirfd), Addr: oldAddr,
			Len: uint32(newdirfd), Off: newAddr}
		return nil
	})
	return err
}

func (b uringBackend) mkdir(dirfd int, path string, mode uint32) error {
	return b.pathOp(uring.OpMkdirat, dirfd, path, mode, 0)
}

// ProbeURing reports whether ModeUring can work on this machine: it sets
// up a ring, checks the operations the file gate needs and registers (and
// drops) a personality. nil means usable; the error names the cause
// otherwise. It does not check CAP_SETUID/CAP_SETGID, which the mode also
// needs (see CanSwitch).
func ProbeURing() error {
	p, err := NewRings(1)
	if err != nil {
		return err
	}
	defer p.Close()
	s := p.slots[0]
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := s.r.RegisterPersonality()
	if err != nil {
		return fmt.Errorf("sandbox: io_uring: %w", err)
	}
	return s.r.UnregisterPersonality(id)
}
