//go:build linux && (386 || arm)

package sys

import "golang.org/x/sys/unix"

// On 386 and arm the plain syscalls take 16-bit ids; the *32 variants take
// 32-bit ids.
const (
	sysSetgroups = unix.SYS_SETGROUPS32
	sysGetgroups = unix.SYS_GETGROUPS32
	sysSetresuid = unix.SYS_SETRESUID32
	sysGetresuid = unix.SYS_GETRESUID32
	sysSetresgid = unix.SYS_SETRESGID32
	sysGetresgid = unix.SYS_GETRESGID32
)
