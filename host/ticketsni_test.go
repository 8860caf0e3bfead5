package host_test

import (
	"crypto/tls"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// sharedCache is a client session cache that offers whatever session it
// holds for any server name: a client that tries a ticket of alice.example
// on bob.example.
type sharedCache struct{ cs *tls.ClientSessionState }

func (c *sharedCache) Get(string) (*tls.ClientSessionState, bool) { return c.cs, c.cs != nil }
func (c *sharedCache) Put(_ string, cs *tls.ClientSessionState) {
	if cs != nil {
		c.cs = cs
	}
}

func ticketSite(t *testing.T) *hosttest.Server {
	return hosttest.Start(t, hosttest.Files{
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\naliases = [\"www.alice.example\"]\nroot = \"../alice\"\n",
		"vhosts.d/bob.toml":   "server_name = \"bob.example\"\nroot = \"../bob\"\n",
		"alice/index.html":    "alice\n",
		"bob/index.html":      "bob\n",
	})
}

// TestTicketBoundToVHost: a session ticket issued on a connection for
// alice.example resumes on alice's names only; offered with SNI
// bob.example it is ignored (full handshake, bob's certificate).
func TestTicketBoundToVHost(t *testing.T) {
	s := ticketSite(t)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		cache := &sharedCache{}
		dial := func(sni string) tls.ConnectionState {
			tc := &tls.Config{ServerName: sni, InsecureSkipVerify: true, ClientSessionCache: cache, MaxVersion: v, MinVersion: v}
			c, err := tls.Dial("tcp", s.HTTPSAddr(), tc)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// TLS 1.3 tickets arrive after the handshake: read a response.
			c.Write([]byte("GET / HTTP/1.1\r\nHost: " + sni + "\r\nConnection: close\r\n\r\n"))
			buf := make([]byte, 4096)
			for {
				if _, err := c.Read(buf); err != nil {
					break
				}
			}
			return c.ConnectionState()
		}
		if cs := dial("alice.example"); cs.DidResume {
			t.Fatal("first connection resumed")
		}
		if cs := dial("alice.example"); !cs.DidResume {
			t.Fatalf("TLS %x: alice's ticket did not resume on alice.example", v)
		}
		if cs := dial("www.alice.example"); !cs.DidResume {
			t.Fatalf("TLS %x: alice's ticket did not resume on her alias", v)
		}
		cs := dial("bob.example")
		if cs.DidResume {
			t.Fatalf("TLS %x: alice's ticket resumed on bob.example", v)
		}
		if got := cs.PeerCertificates[0].DNSNames; len(got) == 0 || got[0] != "bob.example" {
			t.Fatalf("TLS %x: certificate for %v on bob.example", v, got)
		}
	}
}

// TestTicketBoundToVHostOpenSSL is the same with openssl s_client
// -sess_out / -sess_in, as the review did it.
func TestTicketBoundToVHostOpenSSL(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		sandboxtest.Skipf(t, "openssl not installed")
	}
	s := ticketSite(t)
	sess := filepath.Join(t.TempDir(), "alice.sess")
	reused := regexp.MustCompile(`(?m)^(Reused|New), `)
	run := func(sni string, args ...string) string {
		t.Helper()
		cmd := exec.Command("openssl", append([]string{"s_client", "-connect", s.HTTPSAddr(), "-servername", sni, "-ign_eof"}, args...)...)
		cmd.Stdin = strings.NewReader("GET / HTTP/1.1\r\nHost: " + sni + "\r\nConnection: close\r\n\r\n")
		out, _ := cmd.CombinedOutput()
		m := reused.FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("openssl s_client %s: no Reused/New line:\n%s", sni, out)
		}
		return m[1]
	}
	for _, proto := range []string{"-tls1_2", "-tls1_3"} {
		if got := run("alice.example", proto, "-sess_out", sess); got != "New" {
			t.Fatalf("%s first: %s", proto, got)
		}
		if got := run("alice.example", proto, "-sess_in", sess); got != "Reused" {
			t.Fatalf("%s alice's session on alice.example: %s (want Reused)", proto, got)
		}
		if got := run("bob.example", proto, "-sess_in", sess); got != "New" {
			t.Fatalf("%s alice's session on bob.example: %s (want New)", proto, got)
		}
	}
}
