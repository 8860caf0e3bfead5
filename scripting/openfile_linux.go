package scripting

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenFile opens path for hook code (the Lua io library, hook and module
// files) with flags (os.O_* values) and mode 0644 for a file it creates.
// Whatever the sandbox mode, it refuses what no hook has business opening:
//
//   - /proc, /sys and /dev, by name and, after following ordinary symbolic
//     links, by the file system the file is on (procfs, sysfs, cgroupfs, ...):
//     no hook writes /proc/self/task/*/comm or reads another thread's state;
//   - /proc magic links anywhere on the way (openat2 RESOLVE_NO_MAGICLINKS):
//     /proc/self/fd/N/..., which would reach a directory the server holds
//     open (another tenant's document root) past its permissions;
//   - anything but a regular file: FIFOs (opened non-blocking, so a FIFO in a
//     tenant's directory cannot hang the server), devices, sockets,
//     directories.
//
// The kernel still checks the open against the calling thread's identity
// (the tenant's in the switching modes). Errors are *os.PathError; refused
// paths wrap fs.ErrPermission.
func OpenFile(path string, flags int) (*os.File, error) {
	if err := refusedName(path); err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	how := unix.OpenHow{
		Flags:   uint64(flags) | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY,
		Resolve: unix.RESOLVE_NO_MAGICLINKS,
	}
	if flags&os.O_CREATE != 0 {
		how.Mode = 0o644 // openat2 refuses a mode without O_CREAT
	}
	var fd int
	var err error
	for {
		fd, err = unix.Openat2(unix.AT_FDCWD, path, &how)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.ENOSYS {
		// Before Linux 5.6: no magic-link protection, the rest holds.
		fd, err = unix.Open(path, int(how.Flags), 0o644)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := checkOpened(fd); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// errRefused is why OpenFile refused a path; it is a permission error.
var errRefused = &refusedError{}

type refusedError struct{}

func (*refusedError) Error() string        { return "not a file hooks may open" }
func (*refusedError) Is(target error) bool { return target == os.ErrPermission }

// refusedName refuses paths naming /proc, /sys or /dev.
func refusedName(path string) error {
	p := path
	if !filepath.IsAbs(p) {
		if wd, err := os.Getwd(); err == nil {
			p = filepath.Join(wd, p)
		}
	}
	p = filepath.Clean(p)
	for _, dir := range []string{"/proc", "/sys", "/dev"} {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return errRefused
		}
	}
	return nil
}

// Kernel file systems no hook may touch (statfs f_type).
var refusedFS = map[int64]bool{
	unix.PROC_SUPER_MAGIC: true, unix.SYSFS_MAGIC: true, unix.DEBUGFS_MAGIC: true,
	unix.SECURITYFS_MAGIC: true, unix.CGROUP_SUPER_MAGIC: true, unix.CGROUP2_SUPER_MAGIC: true,
	unix.BPF_FS_MAGIC: true, unix.TRACEFS_MAGIC: true, unix.DEVPTS_SUPER_MAGIC: true,
	unix.PSTOREFS_MAGIC: true, unix.EFIVARFS_MAGIC: true, 0x62656570: true, // configfs
}

// checkOpened accepts a regular file outside the kernel's file systems.
func checkOpened(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errNotRegular
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return err
	}
	if refusedFS[int64(fs.Type)] {
		return errRefused
	}
	return nil
}

var errNotRegular = errors.New("not a regular file")

// Remove removes the file or empty directory path under OpenFile's rules:
// its directory is resolved without /proc magic links and must not be on a
// kernel file system, and the name is removed inside it.
func Remove(path string) error {
	dfd, base, err := openParent(path)
	if err != nil {
		return &os.PathError{Op: "remove", Path: path, Err: err}
	}
	defer unix.Close(dfd)
	err = unix.Unlinkat(dfd, base, 0)
	if err == unix.EISDIR || err == unix.EPERM {
		if e := unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR); e == nil || e != unix.ENOTDIR {
			err = e
		}
	}
	if err != nil {
		return &os.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

// Rename renames oldpath to newpath under OpenFile's rules for both.
func Rename(oldpath, newpath string) error {
	ofd, obase, err := openParent(oldpath)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	defer unix.Close(ofd)
	nfd, nbase, err := openParent(newpath)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	defer unix.Close(nfd)
	if err := unix.Renameat(ofd, obase, nfd, nbase); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

// openParent opens path's directory (O_PATH) without magic links and
// returns it with the last element.
func openParent(path string) (int, string, error) {
	if err := refusedName(path); err != nil {
		return -1, "", err
	}
	dir, base := filepath.Split(filepath.Clean(path))
	if base == "" || base == "." || base == ".." || base == "/" {
		return -1, "", unix.EINVAL
	}
	if dir == "" {
		dir = "."
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS}
	dfd, err := unix.Openat2(unix.AT_FDCWD, dir, &how)
	if err == unix.ENOSYS {
		dfd, err = unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return -1, "", err
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(dfd, &fs); err != nil || refusedFS[int64(fs.Type)] {
		unix.Close(dfd)
		if err == nil {
			err = errRefused
		}
		return -1, "", err
	}
	return dfd, base, nil
}
