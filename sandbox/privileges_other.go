//go:build !linux

package sandbox

import (
	"log/slog"
	"os"
)

// DropPrivileges returns ErrUnsupported: it needs Linux.
func DropPrivileges(p Privileges, logger *slog.Logger) error { return ErrUnsupported }

// ThreadCreds returns ErrUnsupported: it needs Linux.
func ThreadCreds() (ThreadIdentity, error) { return ThreadIdentity{}, ErrUnsupported }

// Privileged reports whether the process runs as root.
func Privileged() bool { return os.Geteuid() == 0 }
