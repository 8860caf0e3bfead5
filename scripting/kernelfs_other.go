//go:build !linux

package scripting

import "os"

// CheckHookFile accepts regular files.
func CheckHookFile(f *os.File) error { return checkRegular(f) }

// CheckHookDir accepts directories.
func CheckHookDir(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &os.PathError{Op: "opendir", Path: f.Name(), Err: errNotHookFile}
	}
	return nil
}
