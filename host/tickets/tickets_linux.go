package tickets

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on name (created 0600), so that
// servers sharing a state directory rotate the ticket keys one at a time.
func lockFile(name string) (unlock func(), err error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", name, os.NewSyscallError("flock", err))
	}
	return func() { f.Close() }, nil
}
