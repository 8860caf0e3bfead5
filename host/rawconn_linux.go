package host

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// Socket reads and writes of the HTTPS listener without the Go
// runtime's system call bookkeeping. A net.Conn's Read and Write enter the
// kernel through syscall.Syscall, which marks the goroutine's P as in a
// system call; sysmon, every 20 µs while that lasts, takes such a P away
// and starts another thread to run the other goroutines, and the writer
// parks when its call returns (futex wake-ups and context switches), and
// sysmon keeps its 20 µs tick (nanosleep) as long as it finds one. A
// write to a loopback TCP socket does the receiver's work too and takes
// 20-30 µs on the bench VM, so with GOMAXPROCS=1 that happened for most
// responses. These socket calls never block (the socket is non-blocking:
// EAGAIN is waited for on the runtime's poller, deadlines included,
// through syscall.RawConn), so they are made with syscall.RawSyscall
// inside the RawConn callbacks: the P stays with the goroutine, as an
// event loop keeps its thread. rawConn is the innermost connection of the
// HTTPS listener (withRawIO), under admission control and write_timeout's
// progress deadline, which keep working unchanged on top of it.
//
// The callbacks are made once per connection (readFn, writeFn) and keep
// their arguments and results in the connection, so a Read or Write does
// not allocate; rmu and wmu keep concurrent Reads (or Writes) apart.
type rawConn struct {
	*net.TCPConn
	raw syscall.RawConn

	rmu    sync.Mutex
	rp     []byte // the buffer of the Read in progress
	rn     int
	rerrno syscall.Errno
	readFn func(uintptr) bool

	wmu     sync.Mutex
	wp      []byte // the bytes of the Write in progress
	wn      int
	werrno  syscall.Errno
	writeFn func(uintptr) bool
}

// rawListener wraps the accepted TCP connections of a listener in
// rawConn.
type rawListener struct{ net.Listener }

// withRawIO wraps ln's TCP connections in rawConn (server.go: under
// admission and write progress).
func withRawIO(ln net.Listener) net.Listener { return rawListener{ln} }

func (l rawListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newRawConn(c), nil
}

// newRawConn wraps c, or returns c when it is not a TCP connection.
func newRawConn(c net.Conn) net.Conn {
	tcp, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		return c
	}
	rc := &rawConn{TCPConn: tcp, raw: raw}
	rc.readFn, rc.writeFn = rc.readOnce, rc.writeAll
	return rc
}

func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	c.rp, c.rn, c.rerrno = p, 0, 0
	err := c.raw.Read(c.readFn)
	n, errno := c.rn, c.rerrno
	c.rp = nil
	c.rmu.Unlock()
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

// readOnce is the RawConn.Read callback: one read into c.rp, false
// (wait on the poller) on EAGAIN.
func (c *rawConn) readOnce(fd uintptr) bool {
	p := c.rp
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait on the poller, then again
		}
		c.rn, c.rerrno = int(r), e
		return true
	}
}

func (c *rawConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	c.wp, c.wn, c.werrno = p, 0, 0
	err := c.raw.Write(c.writeFn)
	n, errno := c.wn, c.werrno
	c.wp = nil
	c.wmu.Unlock()
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// writeAll is the RawConn.Write callback: it writes c.wp from c.wn on,
// false (wait on the poller, then go on) when the socket buffer is full.
func (c *rawConn) writeAll(fd uintptr) bool {
	p := c.wp
	for c.wn < len(p) {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[c.wn])), uintptr(len(p)-c.wn))
		switch e {
		case 0:
			c.wn += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werrno = e
			return true
		}
	}
	return true
}

func (c *rawConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
