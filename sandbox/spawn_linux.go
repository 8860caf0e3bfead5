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
	"time"

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
	s.reaper.init(logger)
	if err := s.reaper.setSubreaper(); err != nil {
		logger.Warn("orphans of CGI scripts will not be killed", "err", err)
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
	s.reaper.containment = s.probe()
	ready <- nil
	s.logger.Debug("spawner thread started", "tid", unix.Gettid(), "rlimits", s.reaper.containment.Rlimits,
		"pid_namespace", s.reaper.containment.PIDNamespace)
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
			req.reply <- s.start(req)
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

// Start is StartLimited without limits.
func (s *Spawner) Start(ctx context.Context, cmd *exec.Cmd, id *Identity) error {
	return s.StartLimited(ctx, cmd, id, Limits{})
}

// StartLimited starts cmd on the spawner thread, with id's credentials when
// id is non-nil (nil: the server's own identity, for mode "none"), and lim's
// resource limits set before the program runs (see Containment: where the
// kernel does not let hostd trace its children, the limits are not set and
// a warning was logged at NewSpawner). It overwrites cmd.SysProcAttr's
// Credential, Setsid, Setpgid, Pgid, Foreground, Ptrace and Pdeathsig, and
// the CLONE_NEWPID bit of Cloneflags (other fields are kept): the child runs
// in a new session, so in a new process group whose id is its pid and which
// cannot be joined from the server's session, and gets SIGKILL when the
// spawner thread exits. Unless lim.Background, and where the kernel allows
// it (Containment.PIDNamespace), the child is also PID 1 of a new PID
// namespace: getpid() returns 1 in it, its orphaned descendants are
// reparented to it, and when it exits the kernel kills every process left
// in the namespace. Signals from the server still reach it (SIGKILL always;
// others when the child handles them, as php-fpm does SIGTERM and SIGQUIT),
// but the kernel drops a signal the child did not set a handler for when
// it comes from its own namespace, so a script that writes to a closed pipe
// gets EPIPE rather than SIGPIPE. cmd.Process.Pid is the pid in the
// server's namespace. Call Finished
// once cmd.Wait has returned. When cmd was made with
// exec.CommandContext, Start wraps cmd.Cancel so that the end of that context
// kills the child's whole process group, not just the child.
//
// ctx bounds only the wait for the spawner thread; the child's lifetime is
// governed by cmd's own context (exec.CommandContext). Start returns once the
// child has been forked and exec'd (or failed to), like exec.Cmd.Start; the
// caller then owns cmd (Wait, pipes) as usual. Start is safe for concurrent
// use.
func (s *Spawner) StartLimited(ctx context.Context, cmd *exec.Cmd, id *Identity, lim Limits) error {
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
	// A new session, and so a new process group whose id is the child's
	// pid (setpgid would then fail). Outside the server's session, the
	// child cannot move into the server's process group.
	attr.Setsid, attr.Setpgid, attr.Pgid, attr.Foreground = true, false, 0, false
	attr.Setctty, attr.Noctty, attr.Ptrace = false, false, false
	attr.Pdeathsig = syscall.SIGKILL
	attr.Cloneflags &^= syscall.CLONE_NEWPID // start sets it
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

	uid := int64(-1)
	if id != nil {
		uid = int64(id.UID)
	}
	req := spawnRequest{cmd: cmd, uid: uid, lim: lim, reply: make(chan error, 1)}
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

// start runs on the spawner thread: it starts req.cmd (traced when limits
// are to be set), registers the child and sets its limits.
func (s *Spawner) start(req spawnRequest) error {
	lims := req.lim.rlimits(req.uid >= 0)
	trace := len(lims) > 0 && s.reaper.containment.Rlimits
	if trace {
		req.cmd.SysProcAttr.Ptrace = true
	}
	if s.reaper.containment.PIDNamespace && !req.lim.Background {
		// Go's child, seeing getppid() == 0 in the new namespace, sends
		// itself the parent-death signal; the kernel drops it, as the
		// init of a PID namespace ignores a signal without a handler
		// that comes from inside (the probe checks that it does). So
		// Go's check for a parent that died between clone and
		// prctl(PR_SET_PDEATHSIG) is lost: a child forked in the very
		// moment the server dies may survive it.
		req.cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID
	}
	s.reaper.mu.Lock()
	err := req.cmd.Start()
	if err == nil {
		s.reaper.register(req.cmd, req.uid)
	}
	s.reaper.mu.Unlock()
	if err != nil || !trace {
		return err
	}
	pid := req.cmd.Process.Pid
	if err := setRlimitsAndRelease(pid, lims); err != nil {
		// The child never ran a line of its program: kill it and wait
		// here, as the caller gets an error and no process.
		unix.Kill(pid, unix.SIGKILL)
		req.cmd.Wait()
		s.reaper.mu.Lock()
		delete(s.reaper.live, pid)
		s.reaper.mu.Unlock()
		req.cmd.Process = nil
		return fmt.Errorf("set the limits of %s: %w", req.cmd.Path, err)
	}
	return nil
}

// setRlimitsAndRelease waits for the traced child pid to stop after its
// execve, sets lims in it and detaches, delivering any signal that arrived
// meanwhile. Called on the thread that forked pid (its tracer).
func setRlimitsAndRelease(pid int, lims []sys.Rlimit) error {
	sig, exited, err := sys.WaitTraceStop(pid)
	if err != nil || exited {
		return err // exited: killed before it ran; Wait reports it
	}
	pending := unix.Signal(0)
	if sig != unix.SIGTRAP {
		pending = sig
	}
	p, err := sys.SetChildRlimits(pid, lims)
	if err != nil {
		return err
	}
	if p != 0 {
		pending = p
	}
	return sys.PtraceDetach(pid, pending)
}

// rlimits returns the limits to set; Processes only for a tenant's uid.
// Each is capped at the server's own hard limit, which the child inherits
// and cannot raise without CAP_SYS_RESOURCE.
func (l *Limits) rlimits(tenant bool) []sys.Rlimit {
	var out []sys.Rlimit
	add := func(res int, v uint64) {
		var cur unix.Rlimit
		if unix.Getrlimit(res, &cur) == nil && cur.Max < v {
			v = cur.Max
		}
		out = append(out, sys.Rlimit{Resource: res, Max: v})
	}
	if l.CPU > 0 {
		add(unix.RLIMIT_CPU, uint64((l.CPU+time.Second-1)/time.Second))
	}
	if l.Memory > 0 {
		add(unix.RLIMIT_DATA, uint64(l.Memory))
	}
	if l.Processes > 0 && tenant {
		add(unix.RLIMIT_NPROC, uint64(l.Processes))
	}
	if l.OpenFiles > 0 {
		add(unix.RLIMIT_NOFILE, uint64(l.OpenFiles))
	}
	return out
}

// probe checks, on the spawner thread, what StartLimited can enforce: it
// starts /bin/true in a new PID namespace, and again traced and limited.
func (s *Spawner) probe() Containment {
	c := Containment{Subreaper: s.reaper.subreaper}
	prog := ""
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			prog = p
			break
		}
	}
	if prog == "" {
		c.RlimitsWhyNot, c.PIDNamespaceWhyNot = errNoProbe.Error(), errNoProbe.Error()
		return c
	}
	c.PIDNamespaceWhyNot = probePIDNamespace(prog)
	c.PIDNamespace = c.PIDNamespaceWhyNot == ""
	c.Rlimits, c.RlimitsWhyNot = probeRlimits(prog)
	return c
}

// probePIDNamespace starts prog in a new PID namespace the way start does
// and returns why that failed ("" when it worked).
func probePIDNamespace(prog string) string {
	cmd := exec.Command(prog)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		return "the kernel refuses hostd a new PID namespace per child (CLONE_NEWPID needs CAP_SYS_ADMIN; a container may forbid it): " + err.Error()
	}
	if err := cmd.Wait(); err != nil {
		return "probe in a new PID namespace: " + err.Error()
	}
	return ""
}

// probeRlimits checks that children can be traced and limited: it starts
// prog with a limit, the way start does. It returns why not when not.
func probeRlimits(prog string) (bool, string) {
	cmd := exec.Command(prog)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true, Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return false, "the kernel refuses to let hostd trace its children (ptrace: Yama ptrace_scope, seccomp): " + err.Error()
	}
	err := setRlimitsAndRelease(cmd.Process.Pid, []sys.Rlimit{{Resource: unix.RLIMIT_CORE, Max: 0}})
	if err != nil {
		unix.Kill(cmd.Process.Pid, unix.SIGKILL)
	}
	werr := cmd.Wait()
	switch {
	case err != nil:
		return false, err.Error()
	case werr != nil:
		return false, "probe: " + werr.Error()
	}
	return true, ""
}

// Finished tells the Spawner that cmd, which it started, was waited for:
// it kills what is left of cmd's process group and, lim.OrphanGrace after,
// the orphans of cmd's user (see Spawner). It is safe for concurrent use.
func (s *Spawner) Finished(cmd *exec.Cmd, lim Limits) {
	if cmd.Process == nil {
		return
	}
	pid := cmd.Process.Pid
	if err := KillProcessGroup(pid); err != nil {
		s.logger.Error("kill process group", "pgid", pid, "err", err)
	}
	s.reaper.finished(pid, lim.OrphanGrace)
}

// Containment reports what the Spawner enforces on its children.
func (s *Spawner) Containment() Containment { return s.reaper.containment }
