package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/sandbox/internal/sys"
)

// NewSpawner starts the spawner goroutine, locks it to its OS thread and sets
// PR_SET_NO_NEW_PRIVS on that thread. The thread is never unlocked: it exits
// with the goroutine when Close is called. logger may be nil.
func NewSpawner(logger *slog.Logger) (*Spawner, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Spawner{
		logger: logger,
		reqs:   make(chan spawnRequest),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	ready := make(chan error, 1)
	go s.loop(ready)
	if err := <-ready; err != nil {
		<-s.exited
		return nil, err
	}
	return s, nil
}

// loop is the spawner goroutine. Its thread keeps the server's credentials;
// the only state it changes is no_new_privs, which cannot be undone, and it
// is never unlocked, so the runtime destroys the thread when loop returns
// (which also delivers the parent-death signal to running children).
func (s *Spawner) loop(ready chan<- error) {
	defer close(s.exited)
	runtime.LockOSThread()
	// prctl(PR_SET_NO_NEW_PRIVS) affects only the calling thread and is
	// inherited by every process it forks. The runtime never clones new
	// threads from a locked thread (it hands that to its template thread),
	// so the bit stays on this thread and its children.
	if err := sys.SetNoNewPrivs(); err != nil {
		ready <- fmt.Errorf("sandbox: new spawner: %w", err)
		return
	}
	ready <- nil
	s.logger.Debug("spawner thread started", "tid", unix.Gettid())
	for {
		select {
		case <-s.done:
			s.logger.Debug("spawner thread stopping")
			return
		case req := <-s.reqs:
			if err := cloexecFrom(3); err != nil {
				req.reply <- err
				continue
			}
			// cmd.Start forks (clone with CLONE_VFORK) from this thread;
			// the child sets its groups, gid and uid before exec.
			req.reply <- req.cmd.Start()
		}
	}
}

// cloexecFrom sets FD_CLOEXEC on every descriptor >= first. Go opens all its
// descriptors with O_CLOEXEC, but the server may have inherited descriptors
// without it from whatever started it, and C libraries linked with cgo may
// open some; none of them may reach a child. Descriptors in cmd.ExtraFiles
// and the child's stdio are unaffected: the child dup2s them into place,
// which clears the flag on the copy.
func cloexecFrom(first int) error {
	err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("sandbox: spawn: %w", os.NewSyscallError("close_range", err))
	}
	// Kernels before 5.11: walk /proc/self/fd.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("sandbox: spawn: list descriptors: %w", err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < first {
			continue
		}
		// The directory's own descriptor is already closed: EBADF.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("sandbox: spawn: %w", os.NewSyscallError("fcntl(F_SETFD)", err))
		}
	}
	return nil
}

// Start starts cmd on the spawner thread, with id's credentials when id is
// non-nil (nil: the server's own identity, for mode "none"). It overwrites
// cmd.SysProcAttr's Credential, Setpgid, Pgid, Foreground and Pdeathsig (other
// fields are kept): the child runs in a new process group (or, with Setsid, a
// new session) whose id is its pid, and gets
// SIGKILL when the spawner thread exits. When cmd was made with
// exec.CommandContext, Start wraps cmd.Cancel so that the end of that context
// kills the child's whole process group, not just the child.
//
// ctx bounds only the wait for the spawner thread; the child's lifetime is
// governed by cmd's own context (exec.CommandContext). Start returns once the
// child has been forked and exec'd (or failed to), like exec.Cmd.Start; the
// caller then owns cmd (Wait, pipes) as usual. Start is safe for concurrent
// use.
func (s *Spawner) Start(ctx context.Context, cmd *exec.Cmd, id *Identity) error {
	if cmd.Process != nil {
		return errors.New("sandbox: spawn: command already started")
	}
	var attr syscall.SysProcAttr
	if cmd.SysProcAttr != nil {
		attr = *cmd.SysProcAttr
	}
	attr.Credential = nil
	if id != nil {
		// Defence in depth: a tenant identity is never root. The server's own
		// identity is asked for with a nil id.
		if id.UID == 0 || id.GID == 0 || slices.Contains(id.Groups, 0) {
			return fmt.Errorf("sandbox: spawn %s: refusing tenant identity %d:%d%v (root)", cmd.Path, id.UID, id.GID, id.Groups)
		}
		attr.Credential = &syscall.Credential{
			Uid: id.UID,
			Gid: id.GID,
			// Always set groups: an empty list drops the server's
			// supplementary groups (setgroups(0, NULL)).
			Groups:      slices.Clone(id.Groups),
			NoSetGroups: false,
		}
	}
	// A new process group whose id is the child's pid; with Setsid the new
	// session already makes one (and setpgid would then fail).
	attr.Setpgid, attr.Pgid, attr.Foreground = !attr.Setsid, 0, false
	attr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr = &attr
	if cancel := cmd.Cancel; cancel != nil {
		cmd.Cancel = func() error {
			// Kill the group first (the child is its leader and, until
			// Wait reaps it, keeps the group id reserved), then let the
			// original Cancel (normally Process.Kill) report.
			if p := cmd.Process; p != nil {
				_ = KillProcessGroup(p.Pid)
			}
			return cancel()
		}
	}

	req := spawnRequest{cmd: cmd, reply: make(chan error, 1)}
	select {
	case s.reqs <- req:
	case <-ctx.Done():
		return fmt.Errorf("sandbox: spawn %s: %w", cmd.Path, ctx.Err())
	case <-s.done:
		return ErrSpawnerClosed
	}
	if err := <-req.reply; err != nil {
		return fmt.Errorf("sandbox: spawn: %w", err)
	}
	return nil
}

// KillProcessGroup sends SIGKILL to every process in the process group pgid
// (for a child started by Spawner.Start, pgid is cmd.Process.Pid). It returns
// nil when the group no longer exists. It refuses pgid <= 1, which would mean
// the caller's own group or every process.
//
// The group id stays reserved while any member exists or the leader has not
// been reaped, so calling it before Wait, or after Wait to sweep up
// background processes a child left behind, cannot hit an unrelated group
// unless the pid was recycled after the whole group vanished.
func KillProcessGroup(pgid int) error {
	if pgid <= 1 {
		return fmt.Errorf("sandbox: kill process group %d: invalid group", pgid)
	}
	err := unix.Kill(-pgid, unix.SIGKILL)
	if err == nil || errors.Is(err, unix.ESRCH) {
		return nil
	}
	return fmt.Errorf("sandbox: kill process group %d: %w", pgid, os.NewSyscallError("kill", err))
}
