//go:build !linux

package sandbox

import (
	"io/fs"
	"os"
)

type backend any

// Dirs is a server's set of open root directories; it needs Linux.
type Dirs struct{}

// Len returns 0.
func (d *Dirs) Len() int { return 0 }

type personality struct{}

func (*personality) close() error { return nil }

// Rings is the server's pool of io_uring rings; it needs Linux.
type Rings struct{}

// NewRings returns ErrUnsupported: io_uring needs Linux.
func NewRings(n int) (*Rings, error) { return nil, ErrUnsupported }

// Personalities returns 0.
func (p *Rings) Personalities() int { return 0 }

// Len returns 0.
func (p *Rings) Len() int { return 0 }

// Close does nothing.
func (p *Rings) Close() {}

func (p *Rings) registerPersonality(id *Identity) (*personality, error) { return nil, ErrUnsupported }

// ProbeURing returns ErrUnsupported.
func ProbeURing() error { return ErrUnsupported }

// CanSwitch returns ErrUnsupported.
func CanSwitch() error { return ErrUnsupported }

// AutoMode returns ModeThread and ErrUnsupported.
func AutoMode() (Mode, error) { return ModeThread, ErrUnsupported }

// NewFS returns ErrUnsupported: the file gate needs Linux.
func (t *Tenant) NewFS(roots ...string) (*FS, error) { return nil, ErrUnsupported }

// NewDirectFS returns ErrUnsupported: the file gate needs Linux.
func NewDirectFS(roots ...string) (*FS, error) { return nil, ErrUnsupported }

// Close does nothing.
func (f *FS) Close() error { return nil }

// OpenFileStat returns ErrUnsupported.
func (f *FS) OpenFileStat(name string, flag int, perm os.FileMode) (*os.File, fs.FileInfo, error) {
	return nil, nil, ErrUnsupported
}

// OpenFDStat returns ErrUnsupported.
func (f *FS) OpenFDStat(name string) (int, fs.FileInfo, error) { return -1, nil, ErrUnsupported }

// OpenFile returns ErrUnsupported.
func (f *FS) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return nil, ErrUnsupported
}

// Open returns ErrUnsupported.
func (f *FS) Open(name string) (*os.File, error) { return nil, ErrUnsupported }

// Stat returns ErrUnsupported.
func (f *FS) Stat(name string) (fs.FileInfo, error) { return nil, ErrUnsupported }

// Lstat returns ErrUnsupported.
func (f *FS) Lstat(name string) (fs.FileInfo, error) { return nil, ErrUnsupported }

// ReadDir returns ErrUnsupported.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) { return nil, ErrUnsupported }

// Remove returns ErrUnsupported.
func (f *FS) Remove(name string) error { return ErrUnsupported }

// Rename returns ErrUnsupported.
func (f *FS) Rename(oldname, newname string) error { return ErrUnsupported }

// Mkdir returns ErrUnsupported.
func (f *FS) Mkdir(name string, perm os.FileMode) error { return ErrUnsupported }

// RealPath returns ErrUnsupported.
func (f *FS) RealPath(name string) (string, error) { return "", ErrUnsupported }
