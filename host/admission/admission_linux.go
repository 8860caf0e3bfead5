package admission

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// ClientGone reports whether the peer of c has closed or reset the
// connection, without consuming data: a non-blocking MSG_PEEK that finds
// EOF or an error.
func ClientGone(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		gone = n == 0 && err == nil || err != nil && err != unix.EAGAIN && err != unix.EINTR
		return true // never wait
	})
	return gone
}
