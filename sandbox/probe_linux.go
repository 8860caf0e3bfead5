//go:build linux

package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/sandbox/internal/sys"
)

// CanSwitch reports (nil) whether the process may switch threads to tenant
// identities and register their personalities: CAP_SETUID and CAP_SETGID
// in its permitted set. The error names what is missing.
func CanSwitch() error {
	c, err := sys.Capget()
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return missingCaps(c.Permitted, unix.CAP_SETUID, unix.CAP_SETGID)
}

// AutoMode resolves ModeAuto: ModeUring when ProbeURing passes, else
// ModeThread together with the reason uring was not chosen.
func AutoMode() (Mode, error) {
	if err := ProbeURing(); err != nil {
		return ModeThread, err
	}
	return ModeUring, nil
}
