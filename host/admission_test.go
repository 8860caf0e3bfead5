package host_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
)

// overloadSite is twoTenants with extra [server] keys.
func overloadSite(serverKeys string) hosttest.Files {
	f := twoTenants()
	f["hostd.toml"] = hosttest.MainConfig + serverKeys
	return f
}

// handshake connects with tc, sends one request so the client reads the
// TLS 1.3 ticket, and returns the connection state and the status line.
func handshake(addr string, tc *tls.Config) (tls.ConnectionState, string, error) {
	tc = tc.Clone() // the clone shares the session cache
	tc.NextProtos = []string{"http/1.1"}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, tc)
	if err != nil {
		return tls.ConnectionState{}, "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", tc.ServerName)
	b, err := io.ReadAll(conn)
	line, _, _ := strings.Cut(string(b), "\r\n")
	return conn.ConnectionState(), line, err
}

func TestResumptionAcrossRestart(t *testing.T) {
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		s1 := hosttest.Start(t, twoTenants())
		tc := hosttest.TLSConfig("alice.example")
		tc.MaxVersion = v
		if st, line, err := handshake(s1.HTTPSAddr(), tc); err != nil || st.DidResume || line != "HTTP/1.1 200 OK" {
			t.Fatalf("TLS %x first connection: %v, resumed %v, %q", v, err, st.DidResume, line)
		}
		if err := s1.Stop(); err != nil {
			t.Fatal(err)
		}
		// A restart on the same state_dir, and a second node (its own
		// state_dir: one hostd serves a state_dir) given the same keys.
		s2 := hosttest.StartDir(t, s1.Dir)
		dir3 := t.TempDir()
		hosttest.Write(t, dir3, twoTenants())
		hosttest.Write(t, dir3, hosttest.Files{"hostd.toml": hosttest.MainConfig})
		keys, err := os.ReadFile(filepath.Join(s1.Config.StateDir, "ticket.keys"))
		if err != nil {
			t.Fatal(err)
		}
		hosttest.Write(t, dir3, hosttest.Files{"state/ticket.keys": string(keys)})
		s3 := hosttest.StartDir(t, dir3)
		for i, s := range []*hosttest.Server{s2, s3} {
			st, line, err := handshake(s.HTTPSAddr(), tc)
			if err != nil || !st.DidResume || line != "HTTP/1.1 200 OK" {
				t.Errorf("TLS %x server %d after restart: %v, DidResume %v, %q", v, i+2, err, st.DidResume, line)
			}
		}
		fi, err := os.Stat(filepath.Join(s1.Config.StateDir, "ticket.keys"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("ticket.keys: %v, want mode 0600", err)
		}
	}
}

// TestAdmissionShedsFullHandshakes exhausts accept_rate: new full
// handshakes are then closed before the handshake and counted as shed,
// while a client resuming its session still gets in and is served.
func TestAdmissionShedsFullHandshakes(t *testing.T) {
	s := hosttest.Start(t, overloadSite("accept_rate = 1\n"))
	resumer := hosttest.TLSConfig("alice.example")
	if _, _, err := handshake(s.HTTPSAddr(), resumer); err != nil {
		t.Fatal(err)
	}
	var shedErr error
	for i := 0; i < 64 && shedErr == nil; i++ {
		_, _, shedErr = handshake(s.HTTPSAddr(), hosttest.TLSConfig("alice.example"))
	}
	if shedErr == nil {
		t.Fatal("64 new full handshakes in a row admitted with accept_rate = 1")
	}
	if st := s.HandshakeStats(); st.Shed == 0 {
		t.Errorf("HandshakeStats().Shed = 0 after a shed connection (%v)", shedErr)
	}
	st, line, err := handshake(s.HTTPSAddr(), resumer)
	if err != nil || !st.DidResume || line != "HTTP/1.1 200 OK" {
		t.Errorf("resumption while shedding: %v, DidResume %v, %q", err, st.DidResume, line)
	}
	if !strings.Contains(s.Logs.String(), "overload: shedding new connections") {
		t.Errorf("no shed log line in:\n%s", s.Logs.String())
	}
}

func TestMaxConnsPerIP(t *testing.T) {
	s := hosttest.Start(t, overloadSite("max_conns_per_ip = 2\n"))
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for range 2 {
		c, err := net.Dial("tcp", s.HTTPSAddr())
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	// The third connection is closed without a byte.
	c, err := net.Dial("tcp", s.HTTPSAddr())
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("third connection: read %d, %v; want it closed", n, err)
	}
	c.Close()
	// A slot frees when a connection closes.
	open[0].Close()
	open = open[1:]
	var st tls.ConnectionState
	var line string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, line, err = handshake(s.HTTPSAddr(), hosttest.TLSConfig("alice.example")); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || line != "HTTP/1.1 200 OK" {
		t.Errorf("after a close: %v, %q (%v)", err, line, st.Version)
	}
	if s.HandshakeStats().Shed == 0 {
		t.Error("the refused connection was not counted as shed")
	}
}

// TestMaxConcurrentIsolatesTenants floods a tenant with max_concurrent = 2 (responses
// the clients do not read keep its requests in progress): its next request
// gets 503 with Retry-After, while the quiet tenant is served.
func TestMaxConcurrentIsolatesTenants(t *testing.T) {
	files := twoTenants()
	files["vhosts.d/alice.toml"] += "[limits]\nmax_concurrent = 2\n"
	s := hosttest.Start(t, files)
	f, err := os.Create(filepath.Join(s.Dir, "alice/big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(256 << 20) // more than the socket buffers hold
	f.Close()
	var held []*http.Response
	defer func() {
		for _, r := range held {
			r.Body.Close()
		}
	}()
	for range 2 {
		c := s.Client("alice.example", false)
		resp, err := c.Get("https://alice.example/big.bin")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, resp)
	}
	flood := hosttest.Get(t, s.Client("alice.example", false), "https://alice.example/")
	if flood.StatusCode != http.StatusServiceUnavailable || flood.Header.Get("Retry-After") == "" {
		t.Errorf("flooded tenant: %d, Retry-After %q; want 503 with Retry-After", flood.StatusCode, flood.Header.Get("Retry-After"))
	}
	for range 5 {
		if r := hosttest.Get(t, s.Client("bob.example", false), "https://bob.example/"); r.StatusCode != 200 || r.Body != "bob home\n" {
			t.Errorf("quiet tenant during the flood: %d %q", r.StatusCode, r.Body)
		}
	}
	if !strings.Contains(s.Logs.String(), "max_concurrent reached") {
		t.Errorf("no log line for the 503")
	}
	for _, r := range held {
		r.Body.Close()
	}
	held = nil
	var r hosttest.Response
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r = hosttest.Get(t, s.Client("alice.example", false), "https://alice.example/"); r.StatusCode == 200 {
			break
		}
	}
	if r.StatusCode != 200 {
		t.Errorf("flooded tenant after the flood: %d", r.StatusCode)
	}
}
