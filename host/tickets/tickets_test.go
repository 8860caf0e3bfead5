package tickets

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// resumes reports whether a client with cache resumes against a server
// using cfg (and makes cache hold a fresh ticket from it).
func resumes(t *testing.T, cfg *tls.Config, cache tls.ClientSessionCache, v uint16) bool {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte("x"))
		io.Copy(io.Discard, c)
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, MaxVersion: v, ClientSessionCache: cache, ServerName: "a.example"})
	defer c.Close()
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	return c.ConnectionState().DidResume
}

// testServerConfig returns a server config with httptest's certificate.
func testServerConfig(t *testing.T) *tls.Config {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	ts.StartTLS()
	defer ts.Close()
	return &tls.Config{Certificates: ts.TLS.Certificates}
}

func TestTicketRotationOverlap(t *testing.T) {
	const period = time.Hour
	t0 := time.Unix(1_800_000_000, 0)
	tests := []struct {
		name       string
		issued     time.Duration // a ticket is issued at t0+issued
		used       time.Duration // and presented at t0+used
		keys       int           // keys in the file then
		wantResume bool
	}{
		{"same key", period / 2, period - time.Minute, 1, true},
		{"overlap: rotated, previous key decrypts", period / 2, period + time.Minute, 2, true},
		{"overlap end: rotated, previous key decrypts", period / 2, 2*period - time.Minute, 2, true},
		{"after overlap: issuing key dropped", period / 2, 2*period + time.Minute, 1, false},
		{"long after: every key replaced", period / 2, 10 * period, 1, false},
	}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		for _, tt := range tests {
			file := filepath.Join(t.TempDir(), "state", "ticket.keys")
			tk := New(file, period, slog.New(slog.DiscardHandler))
			cfg := testServerConfig(t)
			cache := tls.NewLRUClientSessionCache(4)
			for _, at := range []time.Duration{0, tt.issued} {
				if err := tk.Apply(t0.Add(at), cfg); err != nil {
					t.Fatal(err)
				}
			}
			if resumes(t, cfg, cache, v) {
				t.Fatalf("TLS %x %s: first connection resumed", v, tt.name)
			}
			if err := tk.Apply(t0.Add(tt.used), cfg); err != nil {
				t.Fatal(err)
			}
			if list, err := readTicketKeys(file); err != nil || len(list) != tt.keys {
				t.Errorf("TLS %x %s: %d keys in the file (%v), want %d", v, tt.name, len(list), err, tt.keys)
			}
			if got := resumes(t, cfg, cache, v); got != tt.wantResume {
				t.Errorf("TLS %x %s: DidResume %v, want %v", v, tt.name, got, tt.wantResume)
			}
			if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("key file: %v, want mode 0600", err)
			}
		}
	}
}

// TestTicketKeysShared checks that two servers sharing a state directory
// converge: the second adopts the first's key instead of making its own,
// and a rotation by either is picked up by the other.
func TestTicketKeysShared(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ticket.keys")
	t0 := time.Unix(1_800_000_000, 0)
	a := New(file, time.Hour, slog.New(slog.DiscardHandler))
	b := New(file, time.Hour, slog.New(slog.DiscardHandler))
	ka, _, err := a.Sync(t0)
	if err != nil {
		t.Fatal(err)
	}
	kb, _, err := b.Sync(t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(kb) != 1 || kb[0] != ka[0] {
		t.Fatalf("second node has %d keys, not the first's", len(kb))
	}
	kb, _, _ = b.Sync(t0.Add(61 * time.Minute)) // b rotates
	ka, changed, _ := a.Sync(t0.Add(62 * time.Minute))
	if !changed || len(ka) != 2 || ka[0] != kb[0] || ka[1] != kb[1] {
		t.Errorf("first node did not adopt the rotation: changed %v, %d keys", changed, len(ka))
	}
	if err := os.WriteFile(file, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Sync(t0); err == nil {
		t.Error("damaged key file accepted")
	}
}
