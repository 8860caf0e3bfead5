//go:build linux && !amd64

package sys

import "golang.org/x/sys/unix"

func setChildRlimits(pid int, lims []Rlimit) (unix.Signal, error) { return 0, ErrInjectUnsupported }
