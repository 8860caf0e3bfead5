package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenLogFile opens the log file path for appending, creating it (mode
// 0640) and any missing directories (mode 0755, owned by the caller) as
// needed, and enforces p on every directory on the way and on the file (see
// LogPolicy). A file it creates, or one it finds with another group, gets
// group gid when gid >= 0, and group read permission, so that the tenant it
// belongs to can read it; when that fails, the open file is returned with an
// error wrapping ErrLogGroup. Any other error wraps ErrLogPath or the
// failing system call, and no file is returned.
func OpenLogFile(path string, p LogPolicy, gid int) (*os.File, error) {
	dir, base, err := splitLogPath(path)
	if err != nil {
		return nil, err
	}
	dfd, _, err := p.walk(dir, true) // creating: nothing is missing
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	const flags = unix.O_WRONLY | unix.O_APPEND | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY
	fd, err := openat(dfd, base, flags|unix.O_CREAT|unix.O_EXCL, 0o640)
	if errors.Is(err, unix.EEXIST) {
		fd, err = openat(dfd, base, flags, 0)
	}
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("%w: %s is a symbolic link", ErrLogPath, path)
	case errors.Is(err, unix.ENXIO):
		return nil, fmt.Errorf("%w: %s is a FIFO or socket", ErrLogPath, path)
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: %w", path, os.NewSyscallError("fstat", err))
	}
	if err := p.checkFile(path, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	if gid >= 0 && (st.Gid != uint32(gid) || st.Mode&0o040 == 0) {
		if err := unix.Fchown(fd, -1, gid); err != nil {
			return f, fmt.Errorf("%s: %w %d: %w", path, ErrLogGroup, gid, os.NewSyscallError("fchown", err))
		}
		if err := unix.Fchmod(fd, st.Mode&0o7777|0o040); err != nil {
			return f, fmt.Errorf("%s: %w %d: %w", path, ErrLogGroup, gid, os.NewSyscallError("fchmod", err))
		}
	}
	return f, nil
}

// CheckLogPath applies p to path without creating or opening anything for
// writing: directories that do not exist yet and a missing file are fine
// (OpenLogFile creates them inside a directory that passed). It is what
// configuration validation calls.
func CheckLogPath(path string, p LogPolicy) error {
	dir, base, err := splitLogPath(path)
	if err != nil {
		return err
	}
	dfd, missing, err := p.walk(dir, false)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if missing {
		return nil
	}
	var st unix.Stat_t
	err = unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return fmt.Errorf("check %s: %w", path, os.NewSyscallError("fstatat", err))
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Errorf("%w: %s is a symbolic link", ErrLogPath, path)
	}
	return p.checkFile(path, &st)
}

func splitLogPath(path string) (dir, base string, err error) {
	if !filepath.IsAbs(path) {
		return "", "", fmt.Errorf("%w: %s is not an absolute path", ErrLogPath, path)
	}
	path = filepath.Clean(path)
	dir, base = filepath.Split(path)
	if base == "" || base == "." || base == ".." {
		return "", "", fmt.Errorf("%w: %s names no file", ErrLogPath, path)
	}
	return filepath.Clean(dir), base, nil
}

func openat(dfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dfd, name, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// walk opens dir component by component from "/" with O_PATH|O_NOFOLLOW,
// checking each directory against p, and returns the last one's
// descriptor. Symbolic links in dir are resolved first (as text, with
// lstat and readlink) so that a trusted /var/run -> /run works; the walk
// itself refuses any symbolic link it meets, so one swapped in after the
// resolution fails the open. With create, missing directories are made
// (0755); without, walk stops at the first missing one and reports it with
// missing = true.
func (p *LogPolicy) walk(dir string, create bool) (fd int, missing bool, err error) {
	real, err := resolveExisting(dir)
	if err != nil {
		return -1, false, fmt.Errorf("log directory %s: %w", dir, err)
	}
	fd, err = openat(unix.AT_FDCWD, "/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false, fmt.Errorf("open /: %w", err)
	}
	names := strings.Split(strings.TrimPrefix(real, "/"), "/")
	if real == "/" {
		names = nil
	}
	cur := "/"
	if err := p.checkDir(fd, cur, len(names) == 0); err != nil {
		unix.Close(fd)
		return -1, false, err
	}
	for i, name := range names {
		cur = filepath.Join(cur, name)
		const flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		nfd, err := openat(fd, name, flags, 0)
		if errors.Is(err, unix.ENOENT) {
			if !create {
				return fd, true, nil
			}
			if err := unix.Mkdirat(fd, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, false, fmt.Errorf("create log directory %s: %w", cur, os.NewSyscallError("mkdirat", err))
			}
			nfd, err = openat(fd, name, flags, 0)
		}
		unix.Close(fd)
		switch {
		case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
			return -1, false, fmt.Errorf("%w: %s is not a directory (a symbolic link swapped in?)", ErrLogPath, cur)
		case err != nil:
			return -1, false, fmt.Errorf("open log directory %s: %w", cur, err)
		}
		fd = nfd
		if err := p.checkDir(fd, cur, i == len(names)-1); err != nil {
			unix.Close(fd)
			return -1, false, err
		}
	}
	return fd, false, nil
}

// resolveExisting resolves the symbolic links of the longest existing
// prefix of dir and appends the rest.
func resolveExisting(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	parent := filepath.Dir(dir)
	if parent == dir {
		return "", err
	}
	rp, err := resolveExisting(parent)
	if err != nil {
		return "", err
	}
	return filepath.Join(rp, filepath.Base(dir)), nil
}

// checkDir applies p to the directory open as fd; last marks the file's
// own directory.
func (p *LogPolicy) checkDir(fd int, name string, last bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("check %s: %w", name, os.NewSyscallError("fstat", err))
	}
	mode := st.Mode
	switch {
	case !p.trustedOwner(st.Uid):
		return fmt.Errorf("%w: directory %s is owned by uid %d (want root%s); keep tenant logs in a directory only root can write, such as /var/log/hostd",
			ErrLogPath, name, st.Uid, p.ownersText())
	case mode&0o002 != 0 && (last || mode&unix.S_ISVTX == 0):
		return fmt.Errorf("%w: directory %s is world-writable (mode %04o)", ErrLogPath, name, mode&0o7777)
	case mode&0o020 != 0 && st.Gid >= p.tenantMin():
		return fmt.Errorf("%w: directory %s is writable by group %d, which may hold tenants (mode %04o)", ErrLogPath, name, st.Gid, mode&0o7777)
	}
	return nil
}

// checkFile applies p to the log file itself.
func (p *LogPolicy) checkFile(name string, st *unix.Stat_t) error {
	mode := st.Mode
	switch {
	case mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("%w: %s is not a regular file", ErrLogPath, name)
	case st.Nlink != 1:
		return fmt.Errorf("%w: %s has %d hard links", ErrLogPath, name, st.Nlink)
	case !p.trustedOwner(st.Uid):
		return fmt.Errorf("%w: %s is owned by uid %d (want root%s)", ErrLogPath, name, st.Uid, p.ownersText())
	case mode&0o002 != 0:
		return fmt.Errorf("%w: %s is world-writable (mode %04o)", ErrLogPath, name, mode&0o7777)
	case mode&0o020 != 0 && st.Gid >= p.tenantMin():
		return fmt.Errorf("%w: %s is writable by group %d (mode %04o)", ErrLogPath, name, st.Gid, mode&0o7777)
	}
	return nil
}

func (p *LogPolicy) ownersText() string {
	var b strings.Builder
	for _, o := range p.Owners {
		if o != 0 {
			fmt.Fprintf(&b, " or uid %d", o)
		}
	}
	return b.String()
}
