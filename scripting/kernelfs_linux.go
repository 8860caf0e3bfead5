package scripting

import (
	"os"

	"golang.org/x/sys/unix"
)

// Kernel file systems no hook may read or write (statfs f_type), even
// where a tenant's directory reaches one (a mount point below it).
var kernelFS = map[int64]bool{
	unix.PROC_SUPER_MAGIC: true, unix.SYSFS_MAGIC: true, unix.DEBUGFS_MAGIC: true,
	unix.SECURITYFS_MAGIC: true, unix.CGROUP_SUPER_MAGIC: true, unix.CGROUP2_SUPER_MAGIC: true,
	unix.BPF_FS_MAGIC: true, unix.TRACEFS_MAGIC: true, unix.DEVPTS_SUPER_MAGIC: true,
	unix.PSTOREFS_MAGIC: true, unix.EFIVARFS_MAGIC: true, 0x62656570: true, // configfs
}

// CheckHookFile accepts a file a hook opened (or a hook or module file)
// when it is a regular file outside the kernel's file systems; the error
// is an *os.PathError matching fs.ErrPermission otherwise.
func CheckHookFile(f *os.File) error {
	if err := checkRegular(f); err != nil {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return &os.PathError{Op: "open", Path: f.Name(), Err: err}
	}
	if kernelFS[int64(st.Type)] {
		return &os.PathError{Op: "open", Path: f.Name(), Err: errNotHookFile}
	}
	return nil
}

// CheckHookDir accepts a directory a hook opened to list it (Ruby's
// Dir.children) when it is a directory outside the kernel's file systems.
func CheckHookDir(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &os.PathError{Op: "opendir", Path: f.Name(), Err: errNotHookFile}
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return &os.PathError{Op: "opendir", Path: f.Name(), Err: err}
	}
	if kernelFS[int64(st.Type)] {
		return &os.PathError{Op: "opendir", Path: f.Name(), Err: errNotHookFile}
	}
	return nil
}
