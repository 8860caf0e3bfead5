//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/sandbox/internal/sys"
)

// capNames names the capabilities DropPrivileges talks about.
var capNames = map[int]string{unix.CAP_SETUID: "CAP_SETUID", unix.CAP_SETGID: "CAP_SETGID"}

// missingCaps returns an error naming each of need missing from permitted.
func missingCaps(permitted uint64, need ...int) error {
	var missing []string
	for _, c := range need {
		if permitted&sys.Mask(uintptr(c)) == 0 {
			name, ok := capNames[c]
			if !ok {
				name = fmt.Sprintf("capability %d", c)
			}
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("sandbox: a tenant mode that switches identity needs %v in the permitted capability set, which lacks it: run hostd as root or grant it (e.g. setcap cap_setuid,cap_setgid+ep, or AmbientCapabilities= in a systemd unit)", missing)
}

// DropPrivileges is the server's startup privilege drop. Call it after the
// listeners are bound and before any Tenant runs anything. In order it:
//
//  1. checks that CAP_SETUID and CAP_SETGID are permitted when p.NeedSwitch;
//  2. drops every capability but CAP_SETUID, CAP_SETGID and p.KeepCaps from
//     the bounding set of every thread (so no child can ever regain them
//     through a set-uid binary or file capabilities); this step is skipped
//     in a cgo build (see below) and, with a warning, without CAP_SETPCAP;
//  3. when p.User is set, switches the whole process to that user:
//     PR_SET_KEEPCAPS, groups, gid, uid (real, effective and saved), then
//     sets permitted and effective to CAP_SETUID and CAP_SETGID (when
//     p.NeedSwitch) plus p.KeepCaps on every thread.
//
// This is the only process-wide credential change in hostd. It is safe only
// because no worker thread exists yet: every thread of the process must end
// up identical, so it uses syscall.AllThreadsSyscall (bounding set,
// keep-caps, capabilities) and the process-wide unix.Setresuid family, which
// also run on every thread. In a cgo build (the default when a C compiler is
// present, because net and os/user use cgo) AllThreadsSyscall is
// unavailable: a p.User switch then fails with ErrAllThreadsUnsupported
// having changed nothing, and the bounding set is left as is: hostd's ELF
// constructor (cmd/hostd/bounding_linux.go) has already reduced it while the
// process had one thread, and if not a warning is logged (children still
// gain nothing at execve: the Spawner sets PR_SET_NO_NEW_PRIVS and gives them
// non-root ids). Build with CGO_ENABLED=0 or -tags netgo,osusergo to get both.
func DropPrivileges(p Privileges, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if p.User != nil && (p.User.UID == 0 || p.User.GID == 0) {
		return fmt.Errorf("sandbox: drop privileges: server user %d:%d is root; leave it unset to keep the current identity", p.User.UID, p.User.GID)
	}
	caps, err := sys.Capget()
	if err != nil {
		return fmt.Errorf("sandbox: drop privileges: %w", err)
	}
	if p.NeedSwitch {
		if err := missingCaps(caps.Permitted, unix.CAP_SETUID, unix.CAP_SETGID); err != nil {
			return err
		}
	}
	setIDs := sys.Mask(unix.CAP_SETUID) | sys.Mask(unix.CAP_SETGID)
	var extra uint64 // p.KeepCaps
	for _, c := range p.KeepCaps {
		if c < 0 || c > 63 {
			return fmt.Errorf("sandbox: drop privileges: capability %d out of range", c)
		}
		extra |= sys.Mask(uintptr(c))
	}
	keep := setIDs | extra // the bounding set
	// Probe: a syscall with the same result on every thread. Fails with
	// ENOTSUP, changing nothing, in a cgo build.
	allThreads := true
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_GETPID, 0, 0, 0); e != 0 {
		if e != syscall.ENOTSUP {
			return fmt.Errorf("sandbox: drop privileges: %w", e)
		}
		allThreads = false
	}
	if p.User != nil && !allThreads {
		return fmt.Errorf("sandbox: drop privileges: switching to server user %d:%d: %w; build hostd with CGO_ENABLED=0 (or -tags netgo,osusergo), or start it as that user with CAP_SETUID and CAP_SETGID (e.g. systemd User= and AmbientCapabilities=)",
			p.User.UID, p.User.GID, ErrAllThreadsUnsupported)
	}

	// 2. Bounding set.
	dropped := 0
	switch {
	case caps.Effective&sys.Mask(unix.CAP_SETPCAP) == 0:
		// A server started unprivileged (e.g. with ambient
		// CAP_SETUID,CAP_SETGID) cannot change its bounding set; its
		// service manager sets it.
		logger.Warn("capability bounding set left unchanged: CAP_SETPCAP is not effective; set it in the service manager (systemd CapabilityBoundingSet=)")
	case allThreads:
		if dropped, err = dropBoundingSet(keep); err != nil {
			return fmt.Errorf("sandbox: drop privileges: %w", err)
		}
	case boundingWithin(keep):
		// A cgo hostd drops the bounding set in an ELF constructor, while
		// the process still has one thread (cmd/hostd/bounding_linux.go):
		// every thread inherited it.
		logger.Debug("capability bounding set already reduced at process start")
	default:
		// The bounding set is per thread and only matters at execve.
		// Children are started by the Spawner on a thread with
		// PR_SET_NO_NEW_PRIVS and with non-root credentials, so execve
		// grants them no capability whatever the bounding set says.
		logger.Warn("capability bounding set left unchanged: a cgo build cannot change every thread; build with CGO_ENABLED=0 (or -tags netgo,osusergo) to drop it, or set it in the service manager (systemd CapabilityBoundingSet=)")
	}

	// 3. Server user.
	if p.User != nil {
		procKeep := extra // the permitted and effective sets
		if p.NeedSwitch {
			procKeep |= setIDs
		}
		if err := switchProcess(p.User, procKeep&caps.Permitted); err != nil {
			return fmt.Errorf("sandbox: drop privileges: switch to server user %d:%d: %w", p.User.UID, p.User.GID, err)
		}
	}

	after, err := sys.Capget()
	if err != nil {
		return fmt.Errorf("sandbox: drop privileges: %w", err)
	}
	if p.NeedSwitch {
		if err := missingCaps(after.Permitted, unix.CAP_SETUID, unix.CAP_SETGID); err != nil {
			return err
		}
	}
	logger.Info("privileges dropped", "bounding_dropped", dropped, "server_user", p.User != nil,
		"cap_permitted", fmt.Sprintf("%#x", after.Permitted), "cap_effective", fmt.Sprintf("%#x", after.Effective))
	return nil
}

// boundingOutside returns the capabilities outside keep that the calling
// thread's bounding set holds.
func boundingOutside(keep uint64) ([]uintptr, error) {
	last, err := sys.CapLastCap()
	if err != nil {
		return nil, err
	}
	var caps []uintptr
	for c := uintptr(0); c <= last && c < 64; c++ {
		if keep&sys.Mask(c) != 0 {
			continue
		}
		in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, c, 0, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("read bounding set: %w", os.NewSyscallError("prctl(PR_CAPBSET_READ)", err))
		}
		if in != 0 {
			caps = append(caps, c)
		}
	}
	return caps, nil
}

// boundingWithin reports whether the calling thread's bounding set holds
// no capability outside keep.
func boundingWithin(keep uint64) bool {
	caps, err := boundingOutside(keep)
	return err == nil && len(caps) == 0
}

// dropBoundingSet drops every capability not in keep from the bounding set
// of every thread and returns how many it dropped.
func dropBoundingSet(keep uint64) (int, error) {
	caps, err := boundingOutside(keep)
	if err != nil {
		return 0, err
	}
	dropped := 0
	for _, c := range caps {
		if err := sys.AllThreadsPrctl("prctl(PR_CAPBSET_DROP)", unix.PR_CAPBSET_DROP, c, 0); err != nil {
			if errors.Is(err, syscall.EPERM) {
				return dropped, fmt.Errorf("dropping capability %d from the bounding set needs CAP_SETPCAP: %w", c, err)
			}
			return dropped, err
		}
		dropped++
	}
	return dropped, nil
}

// switchProcess changes every thread to user, with exactly keep permitted
// and effective.
func switchProcess(user *Identity, keep uint64) error {
	// PR_SET_KEEPCAPS is per thread: set it on all of them, so that the
	// uid change below keeps the permitted set everywhere.
	if err := sys.AllThreadsPrctl("prctl(PR_SET_KEEPCAPS)", unix.PR_SET_KEEPCAPS, 1, 0); err != nil {
		return err
	}
	groups := make([]int, len(user.Groups))
	for i, g := range user.Groups {
		groups[i] = int(g)
	}
	// Process-wide on purpose (see DropPrivileges): these run on every
	// thread.
	if err := unix.Setgroups(groups); err != nil {
		return osErr("setgroups", err)
	}
	if err := unix.Setresgid(int(user.GID), int(user.GID), int(user.GID)); err != nil {
		return osErr("setresgid", err)
	}
	if err := unix.Setresuid(int(user.UID), int(user.UID), int(user.UID)); err != nil {
		return osErr("setresuid", err)
	}
	if err := sys.AllThreadsPrctl("prctl(PR_SET_KEEPCAPS)", unix.PR_SET_KEEPCAPS, 0, 0); err != nil {
		return err
	}
	// euid 0 -> nonzero emptied the effective sets; keep only the needed
	// capabilities and raise them again.
	return sys.AllThreadsCapset(sys.Caps{Effective: keep, Permitted: keep})
}

func osErr(name string, err error) error {
	var e syscall.Errno
	if errors.As(err, &e) {
		return fmt.Errorf("%s: %w", name, e)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// ThreadCreds returns the calling thread's credentials. Lock the goroutine
// to its thread (or call it from a Run fn) for the answer to mean anything.
func ThreadCreds() (ThreadIdentity, error) {
	var s serverState
	if err := s.snapshot(); err != nil {
		return ThreadIdentity{}, fmt.Errorf("sandbox: thread creds: %w", err)
	}
	nnp, err := sys.NoNewPrivs()
	if err != nil {
		return ThreadIdentity{}, fmt.Errorf("sandbox: thread creds: %w", err)
	}
	return ThreadIdentity{
		TID:  sys.Gettid(),
		RUID: s.ruid, EUID: s.euid, SUID: s.suid,
		RGID: s.rgid, EGID: s.egid, SGID: s.sgid,
		Groups: slices.Clone(s.groups()),
		CapEff: s.caps.Effective, CapPrm: s.caps.Permitted, CapInh: s.caps.Inheritable,
		NoNewPrivs: nnp,
	}, nil
}

// Privileged reports whether the calling process could switch identities:
// its effective uid is 0, or CAP_SETUID is in its permitted set. Tenant code
// that runs with the server's identity in such a process runs with those
// privileges.
func Privileged() bool {
	if os.Geteuid() == 0 {
		return true
	}
	c, err := sys.Capget()
	return err == nil && c.Permitted&sys.Mask(unix.CAP_SETUID) != 0
}
