//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"

	"github.com/hostd/hostd/sandbox/internal/sys"
)

const switchSupported = true

// maxInlineGroups is how many server supplementary groups a snapshot holds
// without allocating.
const maxInlineGroups = 16

// serverState is a thread's identity captured before switching it, the
// state restore must return to.
type serverState struct {
	ruid, euid, suid uint32
	rgid, egid, sgid uint32
	caps             sys.Caps
	ngroups          int
	groupBuf         [maxInlineGroups]uint32 // groups when ngroups <= maxInlineGroups
	moreGroups       []uint32                // groups otherwise
}

// groups returns the supplementary groups (sorted, as the kernel keeps them).
func (s *serverState) groups() []uint32 {
	if s.moreGroups != nil {
		return s.moreGroups
	}
	return s.groupBuf[:s.ngroups]
}

// threadState is a locked thread switched to a tenant.
type threadState struct {
	tid int
	id  *Identity
	srv serverState
}

func onMainThread() bool { return sys.Gettid() == os.Getpid() }

// snapshot captures the calling thread's credentials into s.
func (s *serverState) snapshot() error {
	var err error
	if s.ruid, s.euid, s.suid, err = sys.Getresuid(); err != nil {
		return err
	}
	if s.rgid, s.egid, s.sgid, err = sys.Getresgid(); err != nil {
		return err
	}
	var buf [maxInlineGroups]uint32
	g, err := sys.Getgroups(buf[:0])
	if err != nil {
		return err
	}
	s.ngroups = len(g)
	if len(g) <= maxInlineGroups {
		copy(s.groupBuf[:], g)
		s.moreGroups = nil
	} else {
		s.moreGroups = slices.Clone(g) // g may alias buf: keep buf on the stack
	}
	s.caps, err = sys.Capget()
	return err
}

// switchTo switches the calling (locked) thread's effective identity to id:
// groups, then gid, then uid, then the effective capabilities are emptied.
// Real and saved ids stay the server's. When the server's euid is 0 the
// kernel clears the effective set itself on setresuid (checked with the
// cheaper capget); for a non-root server with CAP_SETUID/CAP_SETGID it does
// not, hence the explicit capset. id.Groups must be sorted (NewTenant sorts
// them): setgroups is skipped when they equal the server's, since changing
// credentials costs microseconds per syscall.
func switchTo(id *Identity, srv *serverState) error {
	if !slices.Equal(id.Groups, srv.groups()) {
		if err := sys.Setgroups(id.Groups); err != nil {
			return err
		}
	}
	if err := sys.Setresgid(sys.Unchanged, int(id.GID), sys.Unchanged); err != nil {
		return err
	}
	if err := sys.Setresuid(sys.Unchanged, int(id.UID), sys.Unchanged); err != nil {
		return err
	}
	if srv.euid == 0 {
		c, err := sys.Capget()
		if err != nil {
			return err
		}
		if c.Effective == 0 {
			return nil
		}
	}
	c := srv.caps
	c.Effective = 0
	return sys.Capset(c)
}

// restore switches the calling thread back to srv in the reverse order:
// capabilities (raised from permitted), uid, gid, groups, then verifies.
func restore(srv *serverState) error {
	var err error
	if srv.euid != 0 {
		// A non-root server raises its effective capabilities (they are
		// still permitted) to get CAP_SETGID for setgroups. A root
		// server gets them back from the kernel when euid returns to 0.
		err = sys.Capset(srv.caps)
	}
	// The uid and gid changes back need no capability: they equal the
	// real ids.
	if e := sys.Setresuid(sys.Unchanged, int(srv.euid), sys.Unchanged); err == nil {
		err = e
	}
	if e := sys.Setresgid(sys.Unchanged, int(srv.egid), sys.Unchanged); err == nil {
		err = e
	}
	var now [maxInlineGroups]uint32
	cur, e := sys.Getgroups(now[:0])
	if err == nil {
		err = e
	}
	if !slices.Equal(cur, srv.groups()) {
		if e := sys.Setgroups(srv.groups()); err == nil {
			err = e
		}
	}
	if err != nil {
		return err
	}
	if err := verifyServer(srv); err == nil {
		return nil
	}
	// Root's euid 0 fixup copies permitted to effective: put the exact
	// set back, then verify again.
	if err := sys.Capset(srv.caps); err != nil {
		return err
	}
	return verifyServer(srv)
}

// verifyServer checks that the calling thread's credentials equal srv.
func verifyServer(srv *serverState) error {
	var now serverState
	if err := now.snapshot(); err != nil {
		return fmt.Errorf("%w: %w", ErrIdentity, err)
	}
	if now.ruid != srv.ruid || now.euid != srv.euid || now.suid != srv.suid ||
		now.rgid != srv.rgid || now.egid != srv.egid || now.sgid != srv.sgid ||
		!slices.Equal(now.groups(), srv.groups()) || now.caps != srv.caps {
		return fmt.Errorf("%w: uids %d/%d/%d gids %d/%d/%d caps %#x, want uids %d/%d/%d gids %d/%d/%d caps %#x",
			ErrIdentity, now.ruid, now.euid, now.suid, now.rgid, now.egid, now.sgid, now.caps.Effective,
			srv.ruid, srv.euid, srv.suid, srv.rgid, srv.egid, srv.sgid, srv.caps.Effective)
	}
	return nil
}

// enterTenant switches the calling goroutine's locked thread to id for the
// rest of the thread's life. On error the thread may be half switched: the
// caller must let its goroutine exit without unlocking.
func enterTenant(id *Identity) (*threadState, error) {
	th := &threadState{tid: sys.Gettid(), id: id}
	if err := th.srv.snapshot(); err != nil {
		return nil, fmt.Errorf("sandbox: read server identity: %w", err)
	}
	if err := sys.SetNoNewPrivs(); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if err := switchTo(id, &th.srv); err != nil {
		return nil, fmt.Errorf("sandbox: switch thread to uid %d gid %d: %w", id.UID, id.GID, err)
	}
	if err := th.verifyTenant(); err != nil {
		return nil, err
	}
	return th, nil
}

// verifyTenant checks that the calling thread still has the tenant's
// effective ids, the server's real and saved ids and no effective
// capability.
func (th *threadState) verifyTenant() error {
	r, e, s, err := sys.Getresuid()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrIdentity, err)
	}
	rg, eg, sg, err := sys.Getresgid()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrIdentity, err)
	}
	c, err := sys.Capget()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrIdentity, err)
	}
	if e != th.id.UID || r != th.srv.ruid || s != th.srv.suid ||
		eg != th.id.GID || rg != th.srv.rgid || sg != th.srv.sgid || c.Effective != 0 {
		return fmt.Errorf("%w: tid %d has uids %d/%d/%d gids %d/%d/%d capeff %#x, want euid %d egid %d",
			ErrIdentity, th.tid, r, e, s, rg, eg, sg, c.Effective, th.id.UID, th.id.GID)
	}
	return nil
}

// runInline runs fn on the calling goroutine's own thread switched to id.
func runInline(id *Identity, fn func(), logger *slog.Logger) error {
	runtime.LockOSThread()
	if onMainThread() {
		runtime.UnlockOSThread()
		return ErrMainThread
	}
	var srv serverState
	if err := srv.snapshot(); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("sandbox: read server identity: %w", err)
	}
	// no_new_privs cannot be undone; it stays on this thread (and threads
	// or processes it creates), which only forbids gaining privileges
	// through execve.
	if err := sys.SetNoNewPrivs(); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("sandbox: %w", err)
	}
	var runErr error
	if err := switchTo(id, &srv); err != nil {
		runErr = fmt.Errorf("sandbox: switch thread to uid %d gid %d: %w", id.UID, id.GID, err)
	} else {
		runErr = callFn(fn)
	}
	if err := restore(&srv); err != nil {
		// Never unlock a thread whose credentials could not be verified
		// restored: end this goroutine locked so Go destroys the thread.
		logger.Error("sandbox inline thread identity not restored; ending goroutine to destroy its thread",
			"tid", sys.Gettid(), "err", errors.Join(runErr, err))
		runtime.Goexit()
	}
	runtime.UnlockOSThread()
	return runErr
}

// OnMainThread reports whether the calling goroutine runs on the process's
// main thread. hostd's main calls runtime.LockOSThread in an init function,
// so that the main thread stays with the main goroutine and no sandbox
// worker ever lands on it (Go wedges, rather than destroys, a main thread
// whose goroutine exits locked); main can assert OnMainThread() at startup.
// Workers that find themselves on the main thread anyway park it unused.
func OnMainThread() bool { return onMainThread() }
