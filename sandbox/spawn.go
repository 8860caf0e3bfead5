package sandbox

import (
	"errors"
	"log/slog"
	"os/exec"
	"sync"
)

// ErrSpawnerClosed is returned by Spawner.Start after Spawner.Close.
var ErrSpawnerClosed = errors.New("sandbox: spawner closed")

// Spawner starts child processes (CGI scripts and the like) from one
// dedicated OS thread that keeps the server's credentials for its whole life.
//
// Tenant code must never fork from a thread whose effective ids were switched
// to a tenant: a child forked there would inherit the server's real and saved
// uid and could switch back. The Spawner's goroutine instead locks itself to
// its thread, sets PR_SET_NO_NEW_PRIVS on that thread (inherited by every
// child it forks, so set-uid binaries and file capabilities grant nothing),
// never unlocks it, and forks every child there with the tenant's
// credentials set in the child between fork and exec. Each child gets its own
// process group (so a time limit can kill the whole group) and SIGKILL as its
// parent-death signal (the spawner thread lives as long as the Spawner, so the
// signal only fires when the Spawner is closed or the server dies).
//
// Go opens every file descriptor with O_CLOEXEC, so a child inherits only its
// stdin, stdout, stderr and cmd.ExtraFiles. exec.Cmd's helper goroutines (the
// ones that copy non-*os.File Stdin/Stdout/Stderr and the one that watches a
// CommandContext) run on ordinary server threads: they only move bytes
// between pipes and the caller's readers and writers and signal the child,
// they never open tenant files.
//
// Children do not outlive their work, nor the server. Each child is PID 1
// of a PID namespace of its own (CLONE_NEWPID; Containment.PIDNamespace):
// whatever it starts, a daemon started with setsid or a double fork
// included, is in that namespace, and the kernel kills all of it when the
// child exits or is killed, which it is when the server dies (the
// parent-death signal), however the server dies. Where the kernel refuses
// that namespace, and for Limits.Background children, the server process is
// a child subreaper (PR_SET_CHILD_SUBREAPER): a descendant that leaves a
// child's process tree is reparented to the server instead of init, and
// Finished kills the child's process group and, Limits.OrphanGrace later,
// every such orphan running as the child's user, with its own descendants
// (while the server lives: a SIGKILLed server leaves them to init).
// Resource limits (Limits) are set in each
// child between its execve and its first instruction: the child is started
// traced (PTRACE_TRACEME), stops after the exec, is made to call
// prlimit64 on itself, and is released (see StartLimited).
//
// A Spawner is safe for concurrent use; starts are serialized on its thread.
type Spawner struct {
	logger    *slog.Logger
	reqs      chan spawnRequest
	done      chan struct{} // closed by Close
	exited    chan struct{} // closed when the spawner goroutine has returned
	closeOnce sync.Once

	reaper reaper // children, orphans and sweeps (reaper_linux.go)
}

// spawnRequest is one start request handed to the spawner goroutine.
type spawnRequest struct {
	cmd   *exec.Cmd
	uid   int64 // the child's uid; -1: the server's own
	lim   Limits
	reply chan error // buffered, receives exactly one value
}

// Close stops the spawner thread and waits for it to exit. Children that are
// still running receive SIGKILL (their parent-death signal) when the thread
// exits, and the orphans of every user the Spawner started children for are
// killed. Start calls after Close return ErrSpawnerClosed. Close is
// idempotent.
func (s *Spawner) Close() {
	s.closeOnce.Do(func() { close(s.done) })
	<-s.exited
	s.reaper.closeAll()
}
