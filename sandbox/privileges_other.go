//go:build !linux

package sandbox

import "log/slog"

// DropPrivileges returns ErrUnsupported: it needs Linux.
func DropPrivileges(p Privileges, logger *slog.Logger) error { return ErrUnsupported }

// ThreadCreds returns ErrUnsupported: it needs Linux.
func ThreadCreds() (ThreadIdentity, error) { return ThreadIdentity{}, ErrUnsupported }
