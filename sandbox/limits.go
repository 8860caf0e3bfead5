package sandbox

import "time"

// Limits bound one child of a Spawner and what it leaves behind. The zero
// value of each field is the default: no resource limit, and nothing the
// child starts outlives it.
type Limits struct {
	// CPU is RLIMIT_CPU, rounded up to whole seconds: at the limit the
	// kernel kills the process (soft and hard limits are equal).
	CPU time.Duration
	// Memory is RLIMIT_DATA in bytes: the process's writable private
	// memory (heap, anonymous mappings); allocations beyond it fail.
	// Unlike RLIMIT_AS it does not count address space reserved but not
	// usable (a Go program reserves over 1 GiB at start).
	Memory int64
	// Processes is RLIMIT_NPROC: the processes and threads the child's
	// real uid may have in total, so a fork bomb gets EAGAIN. Applied only
	// to children with a tenant identity (the server's own uid counts the
	// server's threads).
	Processes int
	// OpenFiles is RLIMIT_NOFILE.
	OpenFiles int
	// OrphanGrace is how long after Spawner.Finished the orphans the child
	// left behind (descendants that left its process tree, such as a
	// daemon started with setsid or a double fork) may live before they
	// are killed. Zero kills them at once. It matters only for a child
	// that shares the server's PID namespace (Background, or
	// Containment.PIDNamespace false): in a namespace of its own, they die
	// with the child.
	OrphanGrace time.Duration
	// Background lets what the child leaves behind live up to OrphanGrace
	// after Finished, as without PID namespaces: the child runs in the
	// server's PID namespace. By default (false) the child is PID 1 of a
	// new PID namespace (see Containment.PIDNamespace).
	Background bool
}

// hasRlimits reports whether l sets any resource limit.
func (l *Limits) hasRlimits() bool {
	return l.CPU > 0 || l.Memory > 0 || l.Processes > 0 || l.OpenFiles > 0
}

// Containment describes what a Spawner enforces on its children; hostd
// check and the server's start-up log report it.
type Containment struct {
	// Rlimits is true when Limits' resource limits are set in every child
	// at exec, before it runs an instruction of its own.
	Rlimits bool
	// RlimitsWhyNot says why Rlimits is false.
	RlimitsWhyNot string
	// Subreaper is true when orphaned descendants of the children come back
	// to the server (PR_SET_CHILD_SUBREAPER) and are killed after
	// Limits.OrphanGrace.
	Subreaper bool
	// PIDNamespace is true when every child (but those started with
	// Limits.Background) is PID 1 of a new PID namespace (CLONE_NEWPID):
	// when it exits, is killed, or dies with the server (its parent-death
	// signal), the kernel kills every process left in its namespace, the
	// ones that left its session (setsid) or were double-forked included.
	// Creating one needs CAP_SYS_ADMIN.
	PIDNamespace bool
	// PIDNamespaceWhyNot says why PIDNamespace is false.
	PIDNamespaceWhyNot string
}
