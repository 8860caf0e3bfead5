package host

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Socket reads and writes of the HTTP/1.1 path without the Go runtime's
// system call bookkeeping. A net.Conn's Read and Write enter the kernel
// through syscall.Syscall, which marks the goroutine's P as in a system
// call; sysmon, every 20 µs while that lasts, takes such a P away and
// starts another thread to run the other goroutines, and the writer parks
// when its call returns (futex wake-ups and context switches), and sysmon
// keeps its 20 µs tick (nanosleep) as long as it finds one. A write to a
// loopback TCP socket does the receiver's work too and takes 20-30 µs on
// the bench VM, so with GOMAXPROCS=1 that happened for most responses.
// These socket calls never block (the socket is non-blocking: EAGAIN is
// waited for on the runtime's poller, deadlines included, through
// syscall.RawConn), so they are made with syscall.RawSyscall inside the
// RawConn callbacks: the P stays with the goroutine, as an event loop
// keeps its thread. The wrapped connection chain (admission, write
// progress) is used unchanged until the handshake is done and for
// everything but Read and Write; Write still moves write_timeout's
// deadline first (progressConn.arm).
type rawConn struct {
	net.Conn                 // the accepted connection with its wrappers
	raw      syscall.RawConn // the TCP socket underneath
	prog     *progressConn   // write_timeout's tracker, nil without
	fast     bool            // set by serveTLSConn once the handshake is done
}

// newRawConn wraps c, or returns c when there is no socket underneath.
func newRawConn(c net.Conn) net.Conn {
	var prog *progressConn
	inner := c
	for {
		switch t := inner.(type) {
		case *progressConn:
			prog, inner = t, t.Conn
			continue
		case *admitConn:
			inner = t.Conn
			continue
		}
		break
	}
	tcp, ok := inner.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		return c
	}
	return &rawConn{Conn: c, raw: raw, prog: prog}
}

// goFast switches c (if it is a rawConn) to raw reads and writes; the
// handshake is done. Admission must be over: a connection still holding
// a handshake slot keeps its wrappers' Read.
func goFast(c net.Conn) {
	rc, ok := c.(*rawConn)
	if !ok {
		return
	}
	for inner := rc.Conn; ; {
		switch t := inner.(type) {
		case *progressConn:
			inner = t.Conn
			continue
		case *admitConn:
			t.mu.Lock()
			admitted := t.state == stateAdmitted && len(t.hello) == 0
			t.mu.Unlock()
			if !admitted {
				return
			}
		}
		break
	}
	rc.fast = true
}

func (c *rawConn) Read(p []byte) (int, error) {
	if !c.fast {
		return c.Conn.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait on the poller, then again
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *rawConn) Write(p []byte) (int, error) {
	if !c.fast {
		return c.Conn.Write(p)
	}
	if c.prog != nil {
		c.prog.arm()
	}
	n := 0
	var errno syscall.Errno
	err := c.raw.Write(func(fd uintptr) bool {
		for n < len(p) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // the socket buffer is full: wait, then go on
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// wrapped returns the connection chain under c (admitConnOf).
func (c *rawConn) wrapped() net.Conn { return c.Conn }

func (c *rawConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
