//go:build !linux

package scripting

import (
	"errors"
	"os"
	"syscall"
)

// OpenFile opens path for hook code: non-blocking, regular files only. The
// /proc and magic-link rules of the Linux version have no equivalent here.
func OpenFile(path string, flags int) (*os.File, error) {
	f, err := os.OpenFile(path, flags|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: errors.New("not a regular file")}
	}
	return f, nil
}

// Remove is os.Remove.
func Remove(path string) error { return os.Remove(path) }

// Rename is os.Rename.
func Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
