//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/sandbox/internal/sys"
)

// backend performs the gate's operations with some identity: every
// lookup resolves beneath dirfd without magic links.
type backend interface {
	open(dirfd int, path string, flags int, mode uint32) (int, error)
	unlink(dirfd int, path string, flags int) error
	rename(olddirfd int, oldpath string, newdirfd int, newpath string) error
	mkdir(dirfd int, path string, mode uint32) error
}

// directBackend issues the syscalls on the calling thread, with its
// credentials.
type directBackend struct{}

func (directBackend) open(dirfd int, path string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: beneath}
	return sys.Openat2(dirfd, path, &how)
}

func (directBackend) unlink(dirfd int, path string, flags int) error {
	return sys.Unlinkat(dirfd, path, flags)
}

func (directBackend) rename(olddirfd int, oldpath string, newdirfd int, newpath string) error {
	return sys.Renameat(olddirfd, oldpath, newdirfd, newpath)
}

func (directBackend) mkdir(dirfd int, path string, mode uint32) error {
	return sys.Mkdirat(dirfd, path, mode)
}

// newFS opens roots (with the caller's identity: they are operator
// configuration) and returns a gate using b.
func newFS(roots []string, b backend, dirs *Dirs) (*FS, error) {
	paths, err := cleanRoots(roots)
	if err != nil {
		return nil, err
	}
	f := &FS{b: b, dirs: dirs, st: new(fsState)}
	for _, p := range paths {
		r, err := dirs.open(p)
		if err != nil {
			f.Close()
			return nil, &fs.PathError{Op: "open root", Path: p, Err: err}
		}
		f.roots = append(f.roots, r)
	}
	return f, nil
}

// openRoot opens the directory p as a root (see openTrustedDir).
func openRoot(p string) (*fsRoot, error) {
	fd, real, err := openTrustedDir(p)
	if err != nil {
		return nil, err
	}
	r := &fsRoot{path: p, fd: fd, refs: 1}
	if real != p {
		r.real = real
	}
	return r, nil
}

// maxRootLinks bounds the symbolic links openTrustedDir follows (the
// kernel's own limit for one path).
const maxRootLinks = 40

// openTrustedDir opens the absolute directory p with O_PATH, one component
// at a time from "/" with O_NOFOLLOW, and returns the descriptor and the
// path it resolved to. A symbolic link on the way is followed only when
// root or the server's effective uid owns it: a root usually lies in a
// directory its tenant owns (a home), and the tenant could otherwise swap
// the root for a link to "/" before a start or reload - the gate of a
// ModeNone or ModeSuexec vhost runs as root, so it would serve the whole
// file system. Such a link fails with an error wrapping ErrUntrustedLink.
func openTrustedDir(p string) (fd int, real string, err error) {
	if !filepath.IsAbs(p) {
		return -1, "", fmt.Errorf("%s: not an absolute path", p)
	}
	server := uint32(os.Geteuid())
	links := 0
	rest := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
restart:
	fd, err = sys.Openat(unix.AT_FDCWD, "/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", err
	}
	cur := "/"
	for i := 0; i < len(rest); i++ {
		name := rest[i]
		if name == "" || name == "." {
			continue
		}
		if name == ".." { // only after a link's target: restart lexically
			sys.Close(fd)
			rest = append(splitPath(filepath.Dir(cur)), rest[i+1:]...)
			goto restart
		}
		nfd, err := sys.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			sys.Close(fd)
			return -1, "", err
		}
		var st syscall.Stat_t
		if err := sys.Fstat(nfd, &st); err != nil {
			sys.Close(nfd)
			sys.Close(fd)
			return -1, "", err
		}
		next := path.Join(cur, name)
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			sys.Close(fd)
			fd, cur = nfd, next
			continue
		case syscall.S_IFLNK:
		default:
			sys.Close(nfd)
			sys.Close(fd)
			return -1, "", fmt.Errorf("%s: %w", next, unix.ENOTDIR)
		}
		target, err := readLinkFD(nfd)
		sys.Close(nfd)
		sys.Close(fd)
		if err != nil {
			return -1, "", fmt.Errorf("%s: %w", next, err)
		}
		if st.Uid != 0 && st.Uid != server {
			return -1, "", fmt.Errorf("%s -> %s: %w (owned by uid %d; make the root a directory, or a link root owns)", next, target, ErrUntrustedLink, st.Uid)
		}
		if links++; links > maxRootLinks {
			return -1, "", fmt.Errorf("%s: %w", p, unix.ELOOP)
		}
		if !filepath.IsAbs(target) {
			target = path.Join(cur, target)
		}
		rest = append(splitPath(target), rest[i+1:]...)
		goto restart
	}
	return fd, cur, nil
}

// splitPath splits a cleaned absolute path into its names.
func splitPath(p string) []string {
	p = strings.TrimPrefix(path.Clean(p), "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// readLinkFD reads the target of the symbolic link open as the O_PATH
// descriptor fd (readlinkat with an empty name).
func readLinkFD(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", os.NewSyscallError("readlinkat", err)
	}
	return string(buf[:n]), nil
}

// NewDirectFS returns a gate over roots whose operations run on the
// calling thread with its credentials (what ModeNone and the thread modes
// use; see Tenant.NewFS). It is exported for tools and tests.
func NewDirectFS(roots ...string) (*FS, error) { return newFS(roots, directBackend{}, nil) }

// Close closes the root descriptors (or drops its references to shared
// ones) once no operation uses them; later operations fail with
// ErrFSClosed. Close of a Root view does nothing.
func (f *FS) Close() error {
	if f.view {
		return nil
	}
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	if f.st.closed {
		return nil
	}
	f.st.closed = true
	var err error
	for _, r := range f.roots {
		err = errors.Join(err, f.dirs.close(r))
	}
	return err
}

// Dirs is a server's set of open root directories, shared by its vhosts'
// gates (Options.Dirs): a directory many vhosts use as a root (one
// document root for many names, a shared hook directory) is opened once
// and closed with its last gate. A directory whose path leads elsewhere
// since it was opened (replaced, renamed) is opened anew. The zero value
// and nil work (nil shares nothing). It is safe for concurrent use.
type Dirs struct {
	mu sync.Mutex
	m  map[string]*fsRoot
}

// Len returns how many directories are open.
func (d *Dirs) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.m)
}

// open returns the root for path p, shared when d has it open.
func (d *Dirs) open(p string) (*fsRoot, error) {
	if d == nil {
		return openRoot(p)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.m[p]; r != nil {
		var st, cur syscall.Stat_t
		if syscall.Stat(p, &cur) == nil && sys.Fstat(r.fd, &st) == nil && st.Dev == cur.Dev && st.Ino == cur.Ino {
			r.refs++
			return r, nil
		}
		delete(d.m, p) // stale: its gates keep it until they close
		r.shared = false
	}
	r, err := openRoot(p)
	if err != nil {
		return nil, err
	}
	if d.m == nil {
		d.m = make(map[string]*fsRoot)
	}
	r.shared = true
	d.m[p] = r
	return r, nil
}

// close drops a reference to r, closing it with the last one.
func (d *Dirs) close(r *fsRoot) error {
	if d != nil {
		d.mu.Lock()
		defer d.mu.Unlock()
	}
	if r.refs--; r.refs > 0 {
		return nil
	}
	if d != nil && r.shared && d.m[r.path] == r {
		delete(d.m, r.path)
	}
	fd := r.fd
	r.fd = -1
	return sys.Close(fd)
}

// openErr wraps an error of an open, naming escapes.
func openErr(op, name string, err error) error {
	if errors.Is(err, unix.EXDEV) {
		err = ErrEscapes
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// openFD opens name through the gate and checks the result with fstat:
// only regular files and directories are accepted, unless flags has
// O_PATH.
func (f *FS) openFD(op, name string, flags int, perm os.FileMode, st *syscall.Stat_t) (int, error) {
	if err := f.enter(); err != nil {
		return -1, &fs.PathError{Op: op, Path: name, Err: err}
	}
	defer f.leave()
	root, rel, err := f.resolve(name)
	if err != nil {
		return -1, &fs.PathError{Op: op, Path: name, Err: err}
	}
	var mode uint32
	if flags&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		mode = syscallMode(perm)
	}
	flags |= unix.O_CLOEXEC
	if flags&unix.O_PATH == 0 {
		flags |= unix.O_NONBLOCK // a FIFO must not block the server
	}
	fd, err := f.b.open(root.fd, rel, flags, mode)
	if err != nil {
		return -1, openErr(op, name, err)
	}
	if err := sys.Fstat(fd, st); err != nil {
		sys.Close(fd)
		return -1, &fs.PathError{Op: op, Path: name, Err: err}
	}
	if flags&unix.O_PATH == 0 {
		if t := st.Mode & syscall.S_IFMT; t != syscall.S_IFREG && t != syscall.S_IFDIR {
			sys.Close(fd)
			return -1, &fs.PathError{Op: op, Path: name, Err: ErrNotRegular}
		}
	}
	return fd, nil
}

// OpenFileStat opens name like OpenFile and also returns what fstat said
// about it (saving the caller a second fstat).
func (f *FS) OpenFileStat(name string, flag int, perm os.FileMode) (*os.File, fs.FileInfo, error) {
	var st syscall.Stat_t
	fd, err := f.openFD("open", name, flag&^unix.O_PATH, perm, &st)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fd), name), fileInfoFromStat(path.Base(name), &st), nil
}

// OpenFDStat opens name for reading like OpenFileStat but returns the
// bare descriptor, which the caller closes with syscall.Close: no
// *os.File, so none of its fcntl(2), its epoll registration attempt, its
// allocations and cleanup (the static file path's per-request cost). The
// gate's checks are OpenFileStat's: only regular files and directories.
func (f *FS) OpenFDStat(name string) (int, fs.FileInfo, error) {
	var st syscall.Stat_t
	fd, err := f.openFD("open", name, os.O_RDONLY, 0, &st)
	if err != nil {
		return -1, nil, err
	}
	return fd, fileInfoFromStat(path.Base(name), &st), nil
}

// OpenFile opens name with flag (os.O_RDONLY, os.O_WRONLY|os.O_CREATE ...)
// and, when creating, permissions perm. It refuses FIFOs, sockets and
// devices with ErrNotRegular. The file is in non-blocking mode, which for
// regular files and directories changes nothing.
func (f *FS) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	file, _, err := f.OpenFileStat(name, flag, perm)
	return file, err
}

// Open opens name for reading.
func (f *FS) Open(name string) (*os.File, error) { return f.OpenFile(name, os.O_RDONLY, 0) }

// Stat returns the file information of name, following a final symbolic
// link (inside the root only).
func (f *FS) Stat(name string) (fs.FileInfo, error) { return f.stat("stat", name, 0) }

// Lstat returns the file information of name without following a final
// symbolic link.
func (f *FS) Lstat(name string) (fs.FileInfo, error) {
	return f.stat("lstat", name, unix.O_NOFOLLOW)
}

func (f *FS) stat(op, name string, extra int) (fs.FileInfo, error) {
	var st syscall.Stat_t
	fd, err := f.openFD(op, name, unix.O_PATH|extra, 0, &st)
	if err != nil {
		return nil, err
	}
	sys.Close(fd)
	return fileInfoFromStat(path.Base(name), &st), nil
}

// RealPath returns the absolute path, symbolic links resolved, of the file
// name leads to (inside a root), as the kernel reports it for a descriptor
// opened through the gate.
func (f *FS) RealPath(name string) (string, error) {
	var st syscall.Stat_t
	fd, err := f.openFD("realpath", name, unix.O_PATH, 0, &st)
	if err != nil {
		return "", err
	}
	defer sys.Close(fd)
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", &fs.PathError{Op: "realpath", Path: name, Err: err}
	}
	return p, nil
}

// ReadDir reads the directory name and returns its entries sorted by name.
// Their Info methods go through the gate.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	d, err := f.OpenFile(name, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	out := make([]fs.DirEntry, len(ents))
	for i, e := range ents {
		out[i] = &dirEntry{DirEntry: e, gate: f, path: strings.TrimSuffix(name, "/") + "/" + e.Name()}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, err
}

// parent opens the parent directory of name and returns its descriptor
// (to close when owned) and name's last element.
func (f *FS) parent(op, name string) (fd int, owned bool, base string, err error) {
	root, rel, err := f.resolve(name)
	if err != nil {
		return -1, false, "", &fs.PathError{Op: op, Path: name, Err: err}
	}
	dir, base, ok := splitParent(rel)
	if !ok {
		return -1, false, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if dir == "" {
		return root.fd, false, base, nil
	}
	fd, err = f.b.open(root.fd, dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false, "", openErr(op, name, err)
	}
	return fd, true, base, nil
}

// inParent runs fn with name's parent directory (opened through the
// gate) and name's last element.
func (f *FS) inParent(op, name string, fn func(dfd int, base string) error) error {
	if err := f.enter(); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	defer f.leave()
	dfd, owned, base, err := f.parent(op, name)
	if err != nil {
		return err
	}
	if owned {
		defer sys.Close(dfd)
	}
	if err := fn(dfd, base); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

// Remove removes the file or empty directory name (not a root itself).
func (f *FS) Remove(name string) error {
	return f.inParent("remove", name, func(dfd int, base string) error {
		e := f.b.unlink(dfd, base, 0)
		if e == nil {
			return nil
		}
		e1 := f.b.unlink(dfd, base, unix.AT_REMOVEDIR)
		if e1 == nil {
			return nil
		}
		// As os.Remove: the rmdir error unless name is not a directory.
		if !errors.Is(e1, unix.ENOTDIR) {
			e = e1
		}
		return e
	})
}

// Rename renames oldname to newname (both through the gate; they may lie
// in different roots of the same file system).
func (f *FS) Rename(oldname, newname string) error {
	if err := f.enter(); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	defer f.leave()
	ofd, oowned, obase, err := f.parent("rename", oldname)
	if err != nil {
		return err
	}
	if oowned {
		defer sys.Close(ofd)
	}
	nfd, nowned, nbase, err := f.parent("rename", newname)
	if err != nil {
		return err
	}
	if nowned {
		defer sys.Close(nfd)
	}
	if err := f.b.rename(ofd, obase, nfd, nbase); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}

// Mkdir makes the directory name with permissions perm (before umask).
func (f *FS) Mkdir(name string, perm os.FileMode) error {
	return f.inParent("mkdir", name, func(dfd int, base string) error {
		return f.b.mkdir(dfd, base, syscallMode(perm))
	})
}

// syscallMode converts an os.FileMode's permission and special bits.
func syscallMode(m os.FileMode) uint32 {
	o := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		o |= syscall.S_ISUID
	}
	if m&os.ModeSetgid != 0 {
		o |= syscall.S_ISGID
	}
	if m&os.ModeSticky != 0 {
		o |= syscall.S_ISVTX
	}
	return o
}

// fileInfo is an fs.FileInfo built from a stat result, as os.Stat makes
// them; Sys returns the *syscall.Stat_t.
type fileInfo struct {
	name string
	mode fs.FileMode
	st   syscall.Stat_t
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.st.Size }
func (fi *fileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Sec, fi.st.Mtim.Nsec) }
func (fi *fileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi *fileInfo) Sys() any           { return &fi.st }

func fileInfoFromStat(name string, st *syscall.Stat_t) fs.FileInfo {
	fi := &fileInfo{name: name, st: *st, mode: fs.FileMode(st.Mode & 0o777)}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		fi.mode |= fs.ModeDevice
	case syscall.S_IFCHR:
		fi.mode |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		fi.mode |= fs.ModeDir
	case syscall.S_IFIFO:
		fi.mode |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		fi.mode |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		fi.mode |= fs.ModeSocket
	}
	if st.Mode&syscall.S_ISGID != 0 {
		fi.mode |= fs.ModeSetgid
	}
	if st.Mode&syscall.S_ISUID != 0 {
		fi.mode |= fs.ModeSetuid
	}
	if st.Mode&syscall.S_ISVTX != 0 {
		fi.mode |= fs.ModeSticky
	}
	return fi
}

// readSysctl returns the trimmed content of a /proc/sys file, or "".
func readSysctl(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// NewFS returns the tenant's file gate over roots (absolute directories;
// relative names resolve under the first). In ModeUring its operations go
// through the rings with the tenant's personality; in the other modes they
// run on the calling thread, which Run has switched to the tenant in the
// thread modes. The roots are opened now, with the caller's identity.
func (t *Tenant) NewFS(roots ...string) (*FS, error) {
	if t.pers != nil {
		return newFS(roots, uringBackend{t.pers}, t.dirs)
	}
	return newFS(roots, directBackend{}, t.dirs)
}
