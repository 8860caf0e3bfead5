package sandbox

import "errors"

// LogPolicy says who may control the files hostd opens with its own
// privileges on a tenant's behalf (its error and access logs) and the
// directories above them. The rule is that of a root-owned log directory:
// no tenant can create, rename or replace anything on the way, so the
// server never follows a path a tenant controls.
//
//   - Every directory from "/" down to the file's, and the file itself, is
//     owned by root or by one of Owners (the server's own uid, server.user).
//   - None of them is writable by a tenant: group-writable only when its
//     group is a system group (gid below TenantMinID, e.g. root or adm),
//     never world-writable, except for ancestors with the sticky bit (such
//     as /tmp), whose entries only their owner may rename; the file's own
//     directory may not be world-writable at all.
//   - The file is a regular file with one link (not a symbolic link, a FIFO,
//     a device or a hard link to something else); it is opened with
//     O_NOFOLLOW and O_NONBLOCK and checked with fstat after opening, and
//     every directory on the way is opened with O_NOFOLLOW, so a swap after
//     the check fails instead of being followed.
type LogPolicy struct {
	// Owners are uids besides root that may own the directories and the
	// file (the server's uid when it is not root; server.user).
	Owners []uint32
	// TenantMinID is the lowest uid and gid that may belong to a tenant
	// (server.min_uid; 0 means 1000). Groups below it are system groups.
	TenantMinID uint32
}

// Errors of OpenLogFile and CheckLogPath (wrapped with the path).
var (
	// ErrLogPath means a directory on the way or the file itself is owned
	// or writable by someone who is not trusted, or is not a directory or
	// regular file.
	ErrLogPath = errors.New("log path is not safe for the server to open")
	// ErrLogGroup means the log file was opened but could not be given the
	// tenant's group (the tenant cannot read it); the file is usable.
	ErrLogGroup = errors.New("cannot give the log file the tenant's group")
)

func (p *LogPolicy) tenantMin() uint32 {
	if p.TenantMinID == 0 {
		return 1000
	}
	return p.TenantMinID
}

// trustedOwner reports whether uid may own a log directory or file.
func (p *LogPolicy) trustedOwner(uid uint32) bool {
	if uid == 0 {
		return true
	}
	for _, o := range p.Owners {
		if o == uid {
			return true
		}
	}
	return false
}
