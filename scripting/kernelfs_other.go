//go:build !linux

package scripting

import "os"

// CheckHookFile accepts regular files.
func CheckHookFile(f *os.File) error { return checkRegular(f) }
