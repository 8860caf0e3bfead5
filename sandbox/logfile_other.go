//go:build !linux

package sandbox

import "os"

// OpenLogFile returns ErrUnsupported: the checks need Linux.
func OpenLogFile(path string, p LogPolicy, gid int) (*os.File, error) { return nil, ErrUnsupported }

// CheckLogPath returns ErrUnsupported: the checks need Linux.
func CheckLogPath(path string, p LogPolicy) error { return ErrUnsupported }
