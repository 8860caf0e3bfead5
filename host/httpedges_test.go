package host_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
)

// TestMaxRanges: up to max_ranges ranges get a 206 multipart answer; more
// get the whole file with 200 (nginx's max_ranges), so 4,500 tiny ranges
// cannot turn a small request into a huge answer.
func TestMaxRanges(t *testing.T) {
	files := twoTenants()
	files["vhosts.d/alice.toml"] += "[limits]\nmax_ranges = 4\n"
	s := hosttest.Start(t, files)
	c := s.Client("alice.example", false)
	ranges := func(n int) string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf("%d-%d", i*10, i*10+1))
		}
		return "bytes=" + strings.Join(parts, ",")
	}
	for _, tc := range []struct {
		n, code int
	}{{1, 206}, {4, 206}, {5, 200}, {4500, 200}} {
		req, _ := http.NewRequest("GET", "https://alice.example/1k.txt", nil)
		req.Header.Set("Range", ranges(tc.n))
		r := hosttest.Do(t, c, req)
		if r.StatusCode != tc.code {
			t.Errorf("%d ranges: %d, want %d", tc.n, r.StatusCode, tc.code)
		}
		if tc.code == 200 && r.Body != strings.Repeat("a", 1024) {
			t.Errorf("%d ranges: %d-byte body, want the whole file", tc.n, len(r.Body))
		}
		if tc.n > 1 && tc.code == 206 && !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/byteranges") {
			t.Errorf("%d ranges: Content-Type %q", tc.n, r.Header.Get("Content-Type"))
		}
	}
}

// TestContentLengthAndChunked: hostd's HTTP/1.1 path (h1parse.go, as net/http
// did) frames a request that carries both Content-Length and
// Transfer-Encoding: chunked by the chunked encoding and drops the
// Content-Length (RFC 9112 6.3); the connection is closed after the
// response, so bytes a front proxy meant as the body can never be read as a
// second, smuggled request. Other framing conflicts are refused before any
// handler runs.
func TestContentLengthAndChunked(t *testing.T) {
	s := hosttest.Start(t, twoTenants())
	send := func(raw string) (*http.Response, *bufio.Reader, func()) {
		t.Helper()
		conn, err := tls.Dial("tcp", s.HTTPSAddr(), &tls.Config{ServerName: "alice.example", InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(conn, raw)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, br, func() { conn.Close() }
	}
	smuggle := "GET /secret HTTP/1.1\r\nHost: alice.example\r\n\r\n"
	resp, br, done := send("GET /index.html HTTP/1.1\r\nHost: alice.example\r\nContent-Length: " +
		fmt.Sprint(5+len(smuggle)) + "\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggle)
	if resp.StatusCode != 200 || !resp.Close {
		t.Errorf("CL+TE request: %d, close %v: want 200 and the connection closed", resp.StatusCode, resp.Close)
	}
	if extra, err := http.ReadResponse(br, nil); err == nil {
		t.Errorf("the smuggled request was answered: %d", extra.StatusCode)
	}
	done()
	for _, tc := range []struct {
		raw  string
		code int
	}{
		{"POST / HTTP/1.1\r\nHost: alice.example\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
		{"POST / HTTP/1.1\r\nHost: alice.example\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
		{"POST / HTTP/1.1\r\nHost: alice.example\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400},
		{"POST / HTTP/1.1\r\nHost: alice.example\r\nContent-Length: -1\r\n\r\n", 400},
	} {
		resp, _, done := send(tc.raw)
		if resp.StatusCode != tc.code {
			t.Errorf("%q: %d, want %d", tc.raw, resp.StatusCode, tc.code)
		}
		done()
	}
	// A keep-alive connection without a chunked body stays open.
	resp, _, done = send("GET /index.html HTTP/1.1\r\nHost: alice.example\r\n\r\n")
	defer done()
	if resp.Close {
		t.Error("a plain request closed the connection")
	}
}
