package host

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/hostd/hostd/tenant"
)

// TestRawConn: under admission and write progress, a rawConn reads and
// writes through its wrappers until goFast, and only once admission is
// over; then raw reads and writes move the bytes (a 4 MiB write larger
// than the socket buffers, so EAGAIN is waited for), the write progress
// deadline is still armed, a read deadline times out as a net.Error, and
// the peer's close is io.EOF.
func TestRawConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peerc := make(chan net.Conn, 1)
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
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
	prog := &progressConn{Conn: sc, timeout: time.Minute}
	var stats serverStats
	a := newAdmission(&tenant.Server{MaxHandshakes: -1, AcceptRate: -1}, &stats, slog.New(slog.DiscardHandler))
	ac := &admitConn{Conn: prog, a: a, state: stateHolding}
	c := newRawConn(ac)
	rc, ok := c.(*rawConn)
	if !ok || rc.prog != prog {
		t.Fatalf("newRawConn: %T %+v", c, c)
	}
	if got, ok := admitConnOf(c); !ok || got != ac {
		t.Fatal("admitConnOf does not see through the wrapper")
	}
	goFast(c)
	if rc.fast {
		t.Fatal("fast while admission holds a handshake slot")
	}
	ac.state = stateAdmitted
	goFast(c)
	if !rc.fast {
		t.Fatal("not fast after admission")
	}
	defer c.Close()

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
}
