package admission

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hostd/hostd/tenant"
)

// recordingConn records what the client writes.
type recordingConn struct {
	net.Conn
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.buf.Write(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *recordingConn) firstRecord(t *testing.T) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, err := readRecord(bytes.NewReader(c.buf.Bytes()))
	if err != nil {
		t.Fatalf("client hello record: %v", err)
	}
	return rec
}

func testServerConfig(t *testing.T) *tls.Config {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil) // for its certificate
	ts.StartTLS()
	defer ts.Close()
	return &tls.Config{Certificates: ts.TLS.Certificates}
}

// clientHellos returns the first record a client sends for a full and for
// a resumed handshake at TLS version v, from real handshakes with a
// loopback server.
func clientHellos(t *testing.T, v uint16) (full, resumed []byte) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", testServerConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write([]byte("x")) // lets the client read the TLS 1.3 ticket
				io.Copy(io.Discard, c)
			}()
		}
	}()
	cc := &tls.Config{InsecureSkipVerify: true, MaxVersion: v, ClientSessionCache: tls.NewLRUClientSessionCache(4), ServerName: "a.example"}
	hello := func(wantResume bool) []byte {
		raw, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		rc := &recordingConn{Conn: raw}
		c := tls.Client(rc, cc)
		defer c.Close()
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		if c.ConnectionState().DidResume != wantResume {
			t.Fatalf("TLS %x: DidResume %v, want %v", v, !wantResume, wantResume)
		}
		return rc.firstRecord(t)
	}
	return hello(false), hello(true)
}

func TestIsResumption(t *testing.T) {
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		full, resumed := clientHellos(t, v)
		if isResumption(full) {
			t.Errorf("TLS %x: full handshake hello taken for a resumption", v)
		}
		if !isResumption(resumed) {
			t.Errorf("TLS %x: resumption hello not recognized", v)
		}
		// Truncated or damaged hellos are never resumptions.
		for _, bad := range [][]byte{nil, resumed[:5], resumed[:40], append([]byte{23}, resumed[1:]...)} {
			if isResumption(bad) {
				t.Errorf("TLS %x: damaged hello %x... taken for a resumption", v, bad[:min(len(bad), 8)])
			}
		}
	}
}

func TestTokenBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := newTokenBucket(10, 3, t0)
	tests := []struct {
		at   time.Duration
		want bool
	}{
		{0, true}, {0, true}, {0, true}, {0, false}, // the burst
		{50 * time.Millisecond, false}, // half a token
		{100 * time.Millisecond, true}, // one token after 100ms at 10/s
		{100 * time.Millisecond, false},
		{10 * time.Second, true}, {10 * time.Second, true}, {10 * time.Second, true}, {10 * time.Second, false}, // capped at burst
	}
	for i, tt := range tests {
		if got := b.take(t0.Add(tt.at)); got != tt.want {
			t.Errorf("step %d (t+%v): take = %v, want %v", i, tt.at, got, tt.want)
		}
	}
}

// TestHandshakeSlots drives admitConns over synchronous pipes: a full
// handshake whose server flight the client does not read keeps its slot,
// so a second full handshake is shed, while a resumption attempt is
// admitted; closing the first frees the slot.
func TestHandshakeSlots(t *testing.T) {
	full, resumed := clientHellos(t, tls.VersionTLS13)
	var stats Stats
	a := New(&tenant.Server{MaxHandshakes: 1, AcceptRate: -1, HandshakeWait: tenant.Duration(100 * time.Millisecond)}, &stats, slog.New(slog.DiscardHandler))
	cfg := testServerConfig(t)
	start := func(hello []byte) (*admitConn, net.Conn, chan error) {
		srv, cli := net.Pipe()
		c := &admitConn{Conn: srv, a: a}
		done := make(chan error, 1)
		go func() { done <- tls.Server(c, cfg).Handshake() }()
		go cli.Write(hello)
		return c, cli, done
	}
	waitSlots := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); a.slots.inUse() != want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("slots in use: %d, want %d", a.slots.inUse(), want)
			}
		}
	}
	c1, cli1, done1 := start(full)
	waitSlots(1)

	c2, cli2, done2 := start(full)
	select {
	case err := <-done2:
		if !errors.Is(err, ErrShed) {
			t.Errorf("second full handshake: %v, want ErrShed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second full handshake was not shed")
	}
	c2.Close()
	cli2.Close()
	if n := stats.Shed.Load(); n != 1 {
		t.Errorf("handshakesShed = %d, want 1", n)
	}

	c3, cli3, done3 := start(resumed)
	time.Sleep(2 * a.wait)
	select {
	case err := <-done3:
		t.Errorf("resumption attempt ended early: %v", err)
	default:
	}
	if n := stats.Shed.Load(); n != 1 {
		t.Errorf("resumption attempt shed: handshakesShed = %d", n)
	}
	cli3.Close()
	<-done3
	c3.Close()

	cli1.Close()
	<-done1
	c1.Close()
	waitSlots(0)
	c4, cli4, done4 := start(full)
	waitSlots(1)
	cli4.Close()
	<-done4
	c4.Close()
	waitSlots(0)
}

func TestSlotPoolNewestFirst(t *testing.T) {
	p := &slotPool{size: 1, free: 1}
	if ok, waited := p.acquire(t.Context(), time.Second); !ok || waited {
		t.Fatalf("first acquire: ok %v waited %v", ok, waited)
	}
	got := make(chan string, 2)
	for _, name := range []string{"old", "new"} {
		go func() {
			if ok, _ := p.acquire(t.Context(), 10*time.Second); ok {
				got <- name
			}
		}()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			p.mu.Lock()
			n := len(p.waiters)
			p.mu.Unlock()
			if n == map[string]int{"old": 1, "new": 2}[name] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("waiter did not queue")
			}
		}
	}
	p.release()
	if g := <-got; g != "new" {
		t.Errorf("first released slot went to %q, want the newest waiter", g)
	}
	p.release()
	if g := <-got; g != "old" {
		t.Errorf("second released slot went to %q", g)
	}
	// A waiter that times out leaves no trace.
	if ok, waited := p.acquire(t.Context(), 20*time.Millisecond); ok || !waited {
		t.Errorf("acquire on a full pool: ok %v waited %v", ok, waited)
	}
	p.release()
	if n := p.inUse(); n != 0 {
		t.Errorf("inUse = %d after releasing everything", n)
	}
}

func TestClientGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cli, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if ClientGone(srv) {
		t.Error("idle client reported gone")
	}
	cli.Write([]byte("x"))
	time.Sleep(20 * time.Millisecond)
	if ClientGone(srv) {
		t.Error("client with pending data reported gone")
	}
	if b := make([]byte, 1); func() bool { n, _ := srv.Read(b); return n != 1 }() {
		t.Error("ClientGone consumed the pending byte")
	}
	cli.Close()
	for deadline := time.Now().Add(5 * time.Second); !ClientGone(srv); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("closed client not reported gone")
		}
	}
}
