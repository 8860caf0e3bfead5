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

// checkNotKernelFS refuses a file on one of kernelFS, as an
// *os.PathError of op.
func checkNotKernelFS(f *os.File, op string) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return &os.PathError{Op: op, Path: f.Name(), Err: err}
	}
	if kernelFS[int64(st.Type)] {
		return &os.PathError{Op: op, Path: f.Name(), Err: errNotHookFile}
	}
	return nil
}
