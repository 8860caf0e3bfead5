package host

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/hostd/hostd/host/admission"
)

// TestRawConn: the HTTPS listener's rawConn under write progress moves
// the bytes with raw reads and writes (a 4 MiB write larger than the
// socket buffers, so EAGAIN is waited for), progressConn still arms its
// deadline, a read deadline times out as a net.Error, the peer's close is
// io.EOF, and the socket stays reachable for admission's clientGone.
func TestRawConn(t *testing.T) {
	tcpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := withRawIO(tcpLn)
	defer ln.Close()
	peerc := make(chan net.Conn, 1)
	go func() {
		c, err := net.Dial("tcp", tcpLn.Addr().String())
		if err != nil {
			t.Error(err)
		}
		peerc <- c
	}()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	peer := <-peerc
	defer peer.Close()
	if _, ok := sc.(*rawConn); !ok {
		t.Fatalf("accepted %T, want *rawConn", sc)
	}
	prog := &progressConn{Conn: sc, timeout: time.Minute}
	var c net.Conn = prog
	defer c.Close()
	if admission.ClientGone(sc) {
		t.Fatal("admission.ClientGone on a live connection")
	}

	big := make([]byte, 4<<20)
	for i := range big {
		big[i] = byte(i)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(big))))
		got <- b
	}()
	if n, err := c.Write(big); err != nil || n != len(big) {
		t.Fatalf("write: %d, %v", n, err)
	}
	if b := <-got; string(b) != string(big) {
		t.Fatalf("peer read %d bytes, not what was written", len(b))
	}
	if prog.armed.Load() == 0 {
		t.Error("write progress deadline not armed")
	}

	peer.Write([]byte("hello"))
	buf := make([]byte, 16)
	if n, err := io.ReadFull(c, buf[:5]); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("read: %q, %v", buf[:n], err)
	}
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var ne net.Error
	if _, err := c.Read(buf); !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
	c.SetReadDeadline(time.Time{})
	peer.Close()
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("read after the peer's close: %d, %v", n, err)
	}
	if !admission.ClientGone(sc) {
		t.Error("admission.ClientGone does not see the peer's close through rawConn")
	}
}
