package host_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
)

// paritySite has a handler of every kind: static files and directories,
// [[respond]], Lua and Ruby content hooks, a CGI script.
func paritySite() hosttest.Files {
	files := twoTenants()
	files["vhosts.d/alice.toml"] += `run_as_server = true
hsts = "max-age=60"
[cgi]
enabled = true
[[respond]]
path = "/native"
body = "Hello, world!\n"
content_type = "text/plain"
[[hooks]]
phase = "content"
file = "../hooks/hello.lua"
path = "/lua/*"
[[hooks]]
phase = "content"
file = "../hooks/hello.rb"
path = "/rb/*"
[[hooks]]
phase = "content"
file = "../hooks/big.lua"
path = "/big/*"
`
	files["hooks/hello.lua"] = "r.headers_out[\"Content-Type\"] = \"text/plain\"\nr.headers_out[\"X-Engine\"] = \"lua\"\nr:write(\"Hello, world!\\n\")\n"
	files["hooks/hello.rb"] = "r.headers_out[\"Content-Type\"] = \"text/plain\"\nr.headers_out[\"X-Engine\"] = \"ruby\"\nr.write(\"Hello, world!\\n\")\n"
	files["hooks/big.lua"] = "for i = 1, 200 do r:write(string.rep(\"x\", 99) .. \"\\n\") end\n"
	files["alice/hello.cgi"] = "#!/bin/sh\nprintf 'Content-Type: text/plain\\nX-CGI: 1\\n\\nHello from CGI\\n'\n"
	files["alice/big.txt"] = strings.Repeat("0123456789abcdef", 8192) // 128 KiB
	return files
}

// TestProtocolParity: every handler answers byte-identical bodies and the
// same header fields over hostd's HTTP/1.1 path and over HTTP/2.
func TestProtocolParity(t *testing.T) {
	t.Setenv("HOSTD_TEST_HTTP", "") // both transports, whatever the run
	s := hosttest.Start(t, paritySite())
	os.Chmod(filepath.Join(s.Dir, "alice/hello.cgi"), 0o755)
	h1 := s.Client("alice.example", false)
	h2 := s.Client("alice.example", true)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/"}, {"GET", "/1k.txt"}, {"GET", "/big.txt"}, {"HEAD", "/1k.txt"}, {"GET", "/docs"},
		{"GET", "/empty/"}, {"GET", "/missing"}, {"POST", "/1k.txt"}, {"GET", "/native"}, {"HEAD", "/native"},
		{"GET", "/lua/x"}, {"GET", "/rb/x"}, {"GET", "/big/x"}, {"GET", "/hello.cgi"}, {"GET", "/../etc/passwd"},
	} {
		get := func(c *http.Client, proto int) hosttest.Response {
			req, _ := http.NewRequest(tc.method, "https://alice.example"+tc.path, nil)
			r := hosttest.Do(t, c, req)
			if r.ProtoMajor != proto {
				t.Fatalf("%s %s: HTTP/%d, want HTTP/%d", tc.method, tc.path, r.ProtoMajor, proto)
			}
			return r
		}
		a, b := get(h1, 1), get(h2, 2)
		if a.StatusCode != b.StatusCode || a.Body != b.Body {
			t.Errorf("%s %s: HTTP/1.1 %d %d bytes, HTTP/2 %d %d bytes", tc.method, tc.path, a.StatusCode, len(a.Body), b.StatusCode, len(b.Body))
		}
		if ha, hb := headerLines(a.Header), headerLines(b.Header); !slices.Equal(ha, hb) {
			t.Errorf("%s %s: headers differ\nHTTP/1.1: %q\nHTTP/2:   %q", tc.method, tc.path, ha, hb)
		}
	}
}

// headerLines lists the fields a client sees, without Date (the clock) and
// the fields of HTTP/1.1's connection management.
func headerLines(h http.Header) []string {
	var out []string
	for k, vv := range h {
		switch k {
		case "Date", "Connection", "Keep-Alive", "Transfer-Encoding":
			continue
		}
		for _, v := range vv {
			out = append(out, k+": "+v)
		}
	}
	slices.Sort(out)
	return out
}

// TestHTTP1StrictParsing sends raw requests over TLS to hostd's HTTP/1.1
// path: smuggling-prone framing and malformed heads are refused before
// any handler runs, and the connection is closed after them.
func TestHTTP1StrictParsing(t *testing.T) {
	files := twoTenants()
	files["hostd.toml"] = hosttest.MainConfig + "max_header_bytes = 1024\n"
	s := hosttest.Start(t, files)
	dial := func() (*tls.Conn, *bufio.Reader) {
		t.Helper()
		conn, err := tls.Dial("tcp", s.HTTPSAddr(), &tls.Config{ServerName: "alice.example", InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		return conn, bufio.NewReader(conn)
	}
	const host = "Host: alice.example\r\n"
	for _, tc := range []struct {
		name, raw string
		code      int
	}{
		{"obs-fold", "GET / HTTP/1.1\r\n" + host + "X-A: 1\r\n  folded\r\n\r\n", 400},
		{"space before colon", "GET / HTTP/1.1\r\n" + host + "X-A : 1\r\n\r\n", 400},
		{"space in name", "GET / HTTP/1.1\r\n" + host + "X A: 1\r\n\r\n", 400},
		{"no colon", "GET / HTTP/1.1\r\n" + host + "X-A\r\n\r\n", 400},
		{"control in value", "GET / HTTP/1.1\r\n" + host + "X-A: a\x01b\r\n\r\n", 400},
		{"no host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"two hosts", "GET / HTTP/1.1\r\n" + host + host + "\r\n", 400},
		{"bad method", "G(T / HTTP/1.1\r\n" + host + "\r\n", 400},
		{"bad version", "GET / HTTP/1.x\r\n" + host + "\r\n", 400},
		{"HTTP/2 version", "GET / HTTP/2.0\r\n" + host + "\r\n", 505},
		{"double space", "GET  / HTTP/1.1\r\n" + host + "\r\n", 400},
		{"TE gzip,chunked", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: gzip, chunked\r\n\r\n", 501},
		{"TE twice", "POST / HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
		{"TE in HTTP/1.0", "POST / HTTP/1.0\r\n" + host + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400},
		{"CL conflict", "POST / HTTP/1.1\r\n" + host + "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400},
		{"CL sign", "POST / HTTP/1.1\r\n" + host + "Content-Length: +3\r\n\r\nabc", 400},
		{"CL hex", "POST / HTTP/1.1\r\n" + host + "Content-Length: 0x3\r\n\r\nabc", 400},
		{"expect other", "POST / HTTP/1.1\r\n" + host + "Expect: 200-ok\r\nContent-Length: 1\r\n\r\nx", 417},
		{"head too large", "GET / HTTP/1.1\r\n" + host + "X-Big: " + strings.Repeat("b", 8192) + "\r\n\r\n", 431},
	} {
		conn, br := dial()
		io.WriteString(conn, tc.raw)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			conn.Close()
			continue
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != tc.code || !resp.Close {
			t.Errorf("%s: %d close=%v, want %d and close", tc.name, resp.StatusCode, resp.Close, tc.code)
		}
		conn.Close()
	}

	// Pipelining: three requests in one write, three answers in order;
	// a chunked body with a trailer; Expect: 100-continue gets its 100
	// only when the handler reads the body, and a handler that does not
	// (a static file) closes the connection instead.
	conn, br := dial()
	defer conn.Close()
	io.WriteString(conn, "GET /index.html HTTP/1.1\r\n"+host+"\r\n"+
		"HEAD /1k.txt HTTP/1.1\r\n"+host+"\r\n"+
		"GET /docs/ HTTP/1.1\r\n"+host+"\r\n")
	for _, want := range []string{"alice home\n", "", "alice docs\n"} {
		resp, err := http.ReadResponse(br, &http.Request{Method: map[bool]string{true: "HEAD", false: "GET"}[want == ""]})
		if err != nil {
			t.Fatalf("pipelined: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != want || resp.Close {
			t.Errorf("pipelined: %d %q close=%v, want 200 %q", resp.StatusCode, b, resp.Close, want)
		}
	}
	io.WriteString(conn, "POST /index.html HTTP/1.1\r\n"+host+"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 405 || !resp.Close {
		t.Errorf("chunked POST: %d close=%v, want 405 and close (closeAfterChunked)", resp.StatusCode, resp.Close)
	}

	conn2, br2 := dial()
	defer conn2.Close()
	io.WriteString(conn2, "POST /index.html HTTP/1.1\r\n"+host+"Expect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	resp, err = http.ReadResponse(br2, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 405 || !resp.Close {
		t.Errorf("unread 100-continue body: %d close=%v, want 405 (no 100 Continue) and close", resp.StatusCode, resp.Close)
	}
}

// TestStaticHeadersFollowTheFile: the precomputed header values of a file
// are keyed by its identity and times, so a file rewritten with the same
// size and mtime (ctime moves) is typed anew, and HEAD and GET agree.
func TestStaticHeadersFollowTheFile(t *testing.T) {
	files := twoTenants()
	text := "plain text, no extension to go by\n"
	files["alice/blob"] = text
	s := hosttest.Start(t, files)
	c := s.Client("alice.example", false)
	p := filepath.Join(s.Dir, "alice/blob")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	r := hosttest.Get(t, c, "https://alice.example/blob")
	if ct := r.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" || r.Body != text {
		t.Fatalf("text: %q %q", ct, r.Body)
	}
	png := "\x89PNG\r\n\x1a\n" + strings.Repeat("\x00", len(text)-8)
	time.Sleep(10 * time.Millisecond) // a later ctime
	if err := os.WriteFile(p, []byte(png), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"HEAD", "GET"} {
		req, _ := http.NewRequest(m, "https://alice.example/blob", nil)
		r := hosttest.Do(t, c, req)
		if ct := r.Header.Get("Content-Type"); ct != "image/png" || r.Header.Get("Content-Length") != strconv.Itoa(len(png)) {
			t.Errorf("%s after rewrite: %q, length %s", m, ct, r.Header.Get("Content-Length"))
		}
		if m == "GET" && r.Body != png {
			t.Errorf("GET after rewrite: %q", r.Body)
		}
	}
}

// TestHTTP1ExpectContinue: a handler that reads the body (a CGI script
// echoing its input) makes the server send "100 Continue" first; the
// client sends the body only then and gets it back, on a connection that
// stays open.
func TestHTTP1ExpectContinue(t *testing.T) {
	files := twoTenants()
	files["vhosts.d/alice.toml"] += "run_as_server = true\n[cgi]\nenabled = true\n"
	files["alice/echo.cgi"] = "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\ncat\n"
	s := hosttest.Start(t, files)
	os.Chmod(filepath.Join(s.Dir, "alice/echo.cgi"), 0o755)
	conn, err := tls.Dial("tcp", s.HTTPSAddr(), &tls.Config{ServerName: "alice.example", InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(conn)
	for round := range 2 {
		io.WriteString(conn, "POST /echo.cgi HTTP/1.1\r\nHost: alice.example\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 100 {
			t.Fatalf("round %d: %v %v, want 100 Continue before the body", round, resp, err)
		}
		io.WriteString(conn, "hello")
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != "hello" || resp.Close {
			t.Errorf("round %d: %d %q close=%v, want 200 \"hello\" on an open connection", round, resp.StatusCode, b, resp.Close)
		}
	}
}
