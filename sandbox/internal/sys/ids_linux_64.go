//go:build linux && !386 && !arm

package sys

import "golang.org/x/sys/unix"

// On 64-bit Linux the plain syscalls take 32-bit ids.
const (
	sysSetgroups = unix.SYS_SETGROUPS
	sysGetgroups = unix.SYS_GETGROUPS
	sysSetresuid = unix.SYS_SETRESUID
	sysGetresuid = unix.SYS_GETRESUID
	sysSetresgid = unix.SYS_SETRESGID
	sysGetresgid = unix.SYS_GETRESGID
)
