package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// Mode says how a tenant's in-process work is isolated.
type Mode string

// The sandbox modes. See the package documentation for what each one does.
const (
	// ModeNone runs fn directly with the server's identity.
	ModeNone Mode = "none"
	// ModeSuexec runs in-process work like ModeNone; the tenant's CGI
	// children are started with the tenant's credentials by the Spawner.
	ModeSuexec Mode = "suexec"
	// ModeThread runs fn on a per-tenant pool of locked worker threads whose
	// effective identity is the tenant's.
	ModeThread Mode = "thread"
	// ModeThreadPerRequest runs fn on a fresh locked thread that switches to
	// the tenant and is destroyed afterwards.
	ModeThreadPerRequest Mode = "thread-per-request"
	// ModeInline switches the calling goroutine's own locked thread to the
	// tenant, runs fn, switches back and verifies before unlocking.
	ModeInline Mode = "inline"
	// ModeUring runs fn directly, with no thread hand-off and no
	// credential switch, and checks the tenant's identity per file
	// operation instead: its file gate (Tenant.NewFS) submits every
	// operation to an io_uring ring naming the tenant's personality, its
	// credentials registered once when the Tenant is made.
	ModeUring Mode = "uring"
	// ModeAuto is a configuration choice, not a mode a Tenant runs in:
	// ModeUring where ProbeURing passes, else ModeThread (see AutoMode).
	ModeAuto Mode = "auto"
)

// Modes lists the modes a Tenant runs in, in the order the documentation
// presents them.
func Modes() []Mode {
	return []Mode{ModeNone, ModeSuexec, ModeUring, ModeThread, ModeThreadPerRequest, ModeInline}
}

// ParseMode parses a mode name as written in configuration; "auto" is not
// one (resolve it with AutoMode first).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeNone, ModeSuexec, ModeUring, ModeThread, ModeThreadPerRequest, ModeInline:
		return m, nil
	}
	return "", fmt.Errorf("sandbox: unknown mode %q (want none, suexec, uring, thread, thread-per-request or inline)", s)
}

// Switches reports whether m runs in-process work on a thread switched to
// the tenant's effective identity (thread, thread-per-request, inline).
func (m Mode) Switches() bool {
	return m == ModeThread || m == ModeThreadPerRequest || m == ModeInline
}

// ChecksTenant reports whether the kernel checks m's in-process file
// operations against the tenant's identity: the switching modes and
// ModeUring.
func (m Mode) ChecksTenant() bool { return m.Switches() || m == ModeUring }

// NeedsPrivileges reports whether the server must keep CAP_SETUID and
// CAP_SETGID for a tenant in mode m: every mode but none switches credentials
// somewhere (suexec in its CGI children).
func (m Mode) NeedsPrivileges() bool { return m != ModeNone && m != "" }

// String returns the mode's name.
func (m Mode) String() string { return string(m) }

// Identity is a set of credentials: a uid, a primary gid and supplementary
// groups (nil or empty: none).
type Identity struct {
	UID, GID uint32
	Groups   []uint32
}

// Options configure a Tenant. The zero value of every field but Mode and
// Identity is usable.
type Options struct {
	// Mode selects the isolation; empty means ModeNone.
	Mode Mode
	// Identity is the tenant's identity; uid 0, gid 0 and group 0 are
	// refused for switching modes.
	Identity Identity
	// MaxWorkers bounds the worker threads of ModeThread (default 64).
	MaxWorkers int
	// IdleTimeout is how long an idle ModeThread worker waits for work
	// before its thread exits (default 30s).
	IdleTimeout time.Duration
	// Logger receives worker lifecycle and failure logs; nil discards them.
	Logger *slog.Logger
	// Rings are the server's io_uring rings; required for ModeUring, on
	// which NewTenant registers the tenant's personality.
	Rings *Rings
	// Dirs, when set, shares the root directories of the tenant's gates
	// (NewFS) with other tenants' gates using the same directories.
	Dirs *Dirs
}

// Defaults for Options.
const (
	DefaultMaxWorkers  = 64
	DefaultIdleTimeout = 30 * time.Second
)

// Stats is a snapshot of a Tenant's counters.
type Stats struct {
	Workers int    // live worker threads (thread, thread-per-request)
	Busy    int    // calls of fn running now
	Started uint64 // worker threads started since NewTenant
	Runs    uint64 // calls of fn started since NewTenant
	Queued  int    // Runs waiting for a worker (thread)
}

// Privileges describe the startup privilege drop done by DropPrivileges.
type Privileges struct {
	// NeedSwitch is true when any tenant's mode NeedsPrivileges: the server
	// then keeps CAP_SETUID and CAP_SETGID permitted.
	NeedSwitch bool
	// User, when non-nil, is the unprivileged identity the whole process
	// switches to (uid and gid must not be 0); nil keeps the current one.
	User *Identity
	// KeepCaps are further capabilities (unix.CAP_* numbers) to keep in the
	// bounding set and, when User is set, in the permitted and effective
	// sets (for example CAP_KILL to signal tenant-owned processes).
	KeepCaps []int
}

// ThreadIdentity is the credential state of one OS thread.
type ThreadIdentity struct {
	TID                    int
	RUID, EUID, SUID       uint32
	RGID, EGID, SGID       uint32
	Groups                 []uint32
	CapEff, CapPrm, CapInh uint64
	NoNewPrivs             bool
}

// Errors returned by this package (possibly wrapped).
var (
	// ErrClosed is returned by Run after Close.
	ErrClosed = errors.New("sandbox: tenant closed")
	// ErrUnsupported is returned on systems without per-thread credentials.
	ErrUnsupported = errors.New("sandbox: per-thread credential switching requires linux")
	// ErrIdentity is returned when a thread's credentials are not what they
	// must be after a switch; the thread is then never reused.
	ErrIdentity = errors.New("sandbox: thread identity check failed")
	// ErrMainThread is returned by ModeInline when called on the process's
	// main thread, whose credentials must never be switched.
	ErrMainThread = errors.New("sandbox: inline mode refused on the main thread")
	// ErrGoexit is returned by Run in the thread modes when fn called
	// runtime.Goexit; its thread was discarded.
	ErrGoexit = errors.New("sandbox: tenant function called runtime.Goexit")
	// ErrNoRings is returned by NewTenant for ModeUring without
	// Options.Rings.
	ErrNoRings = errors.New("sandbox: mode uring needs the server's io_uring rings (Options.Rings)")
	// ErrAllThreadsUnsupported is returned by DropPrivileges when the binary
	// cannot run a syscall on every thread (a cgo build): the bounding set
	// and server user change need it. Nothing was changed.
	ErrAllThreadsUnsupported = errors.New("sandbox: changing every thread's credentials is not supported in a cgo build")
)

// PanicError is returned by Run when fn panicked. The thread's identity was
// restored (or the thread was discarded) before Run returned. Value is what
// fn passed to panic, so that the caller can raise it again on its own
// goroutine, outside the tenant's thread (package host does so with
// net/http's http.ErrAbortHandler, which must reach the connection's
// goroutine to cut the connection); Stack is the tenant goroutine's stack
// at the panic, for the log.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("sandbox: tenant function panicked: %v", e.Value)
}

// callFn runs fn and turns a panic into a *PanicError.
func callFn(fn func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	fn()
	return nil
}
