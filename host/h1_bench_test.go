package host_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
)

// BenchmarkH1Request sends keep-alive HTTP/1.1 requests over TLS on
// loopback to hostd's own HTTP/1.1 loop (h1*.go) and reads each response
// whole, for the allocations of one request (-benchmem): the client is a
// raw TLS connection writing one fixed request and reading into one
// buffer, so what allocates is the server (and crypto/tls's records).
func BenchmarkH1Request(b *testing.B) {
	s := hosttest.Start(b, hosttest.Files{
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\nsandbox = \"none\"\n" +
			"[[respond]]\npath = \"/ping\"\nbody = \"pong\"\n",
		"alice/index.html": strings.Repeat("a", 1024),
	})
	for _, path := range []string{"/index.html", "/ping"} {
		b.Run(strings.TrimPrefix(path, "/"), func(b *testing.B) {
			c, err := tls.Dial("tcp", s.HTTPSAddr(), &tls.Config{ServerName: "alice.example", InsecureSkipVerify: true,
				NextProtos: []string{"http/1.1"}})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := []byte("GET " + path + " HTTP/1.1\r\nHost: alice.example\r\n\r\n")
			buf := make([]byte, responseLen(b, c, req))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
				if !bytes.HasPrefix(buf, []byte("HTTP/1.1 200 ")) {
					b.Fatalf("response %.100q", buf)
				}
			}
		})
	}
}

// responseLen sends req once and returns the length of its response (head
// and Content-Length body); the next ones have the same length (the Date
// header's is fixed).
func responseLen(b *testing.B, c *tls.Conn, req []byte) int {
	b.Helper()
	if _, err := c.Write(req); err != nil {
		b.Fatal(err)
	}
	var head []byte
	one := make([]byte, 1)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		if _, err := io.ReadFull(c, one); err != nil {
			b.Fatalf("read head %q: %v", head, err)
		}
		head = append(head, one[0])
	}
	_, v, ok := strings.Cut(strings.ToLower(string(head)), "\r\ncontent-length: ")
	n, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(v, "\r\n", 2)[0]))
	if !ok || err != nil {
		b.Fatalf("no content-length in %q", head)
	}
	if _, err := io.ReadFull(c, make([]byte, n)); err != nil {
		b.Fatal(err)
	}
	return len(head) + n
}
