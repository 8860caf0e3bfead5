//go:build !linux

package scripting

import "os"

// CheckHookFile accepts regular files.
func CheckHookFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &os.PathError{Op: "open", Path: f.Name(), Err: errNotHookFile}
	}
	return nil
}
