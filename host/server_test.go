package host_test

import (
	"bufio"
	"crypto/tls"
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

// twoTenants is alice (with an alias) and bob, each with a small site.
func twoTenants() hosttest.Files {
	return hosttest.Files{
		"vhosts.d/alice.toml": `server_name = "alice.example"
aliases = ["www.alice.example"]
root = "../alice"
`,
		"vhosts.d/bob.toml": `server_name = "bob.example"
root = "../bob"
allow_http = true
directory_listing = true
`,
		"alice/index.html":      "alice home\n",
		"alice/docs/index.html": "alice docs\n",
		"alice/empty/":          "",
		"alice/1k.txt":          strings.Repeat("a", 1024),
		"bob/index.html":        "bob home\n",
		"bob/secret.txt":        "bob secret\n",
		"bob/files/b.txt":       "b\n",
	}
}

func TestSNICertificateSelection(t *testing.T) {
	s := hosttest.Start(t, twoTenants())
	for sni, want := range map[string]string{
		"alice.example":     "alice.example",
		"www.alice.example": "alice.example",
		"bob.example":       "bob.example",
		"evil.example":      "hostd.invalid",
	} {
		c := s.PeerCertificate(t, sni)
		if c.Subject.CommonName != want {
			t.Errorf("SNI %s: certificate CN %q, want %q", sni, c.Subject.CommonName, want)
		}
		if c.PublicKeyAlgorithm.String() != "ECDSA" {
			t.Errorf("SNI %s: key %s, want ECDSA", sni, c.PublicKeyAlgorithm)
		}
	}
	// The generated certificate is kept: a restart presents the same one.
	first := s.PeerCertificate(t, "alice.example")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	s2 := hosttest.StartDir(t, s.Dir)
	if again := s2.PeerCertificate(t, "alice.example"); !again.Equal(first) {
		t.Error("restart generated a new certificate instead of keeping the stored one")
	}
	if fi, err := os.Stat(filepath.Join(s.Dir, "state/certs/alice.example.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("generated key: %v, mode %v", err, fi.Mode())
	}
}

func TestConfiguredCertificate(t *testing.T) {
	files := twoTenants()
	s0 := hosttest.Start(t, files) // generates certs we can reuse as "configured" files
	cert, _ := os.ReadFile(filepath.Join(s0.Dir, "state/certs/bob.example.crt"))
	key, _ := os.ReadFile(filepath.Join(s0.Dir, "state/certs/bob.example.key"))
	files = twoTenants()
	files["vhosts.d/alice.toml"] += "tls_cert = \"certs/a.pem\"\ntls_key = \"certs/a.key\"\n"
	files["vhosts.d/certs/a.pem"] = string(cert)
	files["vhosts.d/certs/a.key"] = string(key)
	s := hosttest.Start(t, files)
	if c := s.PeerCertificate(t, "alice.example"); c.Subject.CommonName != "bob.example" {
		t.Errorf("configured certificate not used: CN %q", c.Subject.CommonName)
	}
}

func TestRouting(t *testing.T) {
	s := hosttest.Start(t, twoTenants())
	base := "https://" + s.HTTPSAddr()
	tests := []struct {
		name, sni, host, path string
		h2                    bool
		code                  int
		body                  string
	}{
		{"alice home h1", "alice.example", "alice.example", "/", false, 200, "alice home\n"},
		{"alice home h2", "alice.example", "alice.example", "/", true, 200, "alice home\n"},
		{"alias", "www.alice.example", "www.alice.example", "/", true, 200, "alice home\n"},
		{"alias and name share a vhost", "www.alice.example", "alice.example", "/", false, 200, "alice home\n"},
		{"host with port and case", "alice.example", "ALICE.example:8443", "/", false, 200, "alice home\n"},
		{"bob", "bob.example", "bob.example", "/", true, 200, "bob home\n"},
		{"host/SNI mismatch", "alice.example", "bob.example", "/secret.txt", false, 421, "Misdirected"},
		{"host/SNI mismatch h2", "alice.example", "bob.example", "/secret.txt", true, 421, "Misdirected"},
		{"known host, unknown SNI", "evil.example", "bob.example", "/secret.txt", false, 421, "Misdirected"},
		{"unknown host", "evil.example", "evil.example", "/", false, 404, "no site is configured"},
		{"no SNI, Host decides", "", "bob.example", "/", false, 200, "bob home\n"},
		{"dir redirect", "alice.example", "alice.example", "/docs?x=1", false, 301, ""},
		{"dir index", "alice.example", "alice.example", "/docs/", false, 200, "alice docs\n"},
		{"no listing by default", "alice.example", "alice.example", "/empty/", false, 403, "listing is disabled"},
		{"listing when enabled", "bob.example", "bob.example", "/files/", false, 200, `<a href="b.txt">b.txt</a>`},
		{"missing", "alice.example", "alice.example", "/nope.html", false, 404, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := s.Client(tc.sni, tc.h2)
			req, _ := http.NewRequest("GET", base+tc.path, nil)
			req.Host = tc.host
			r := hosttest.Do(t, c, req)
			if r.StatusCode != tc.code || !strings.Contains(r.Body, tc.body) {
				t.Fatalf("got %d %q, want %d containing %q", r.StatusCode, r.Body, tc.code, tc.body)
			}
			if tc.h2 && r.ProtoMajor != 2 {
				t.Errorf("protocol %s, want HTTP/2", r.Proto)
			}
			if tc.code == 301 && r.Header.Get("Location") != "/docs/?x=1" {
				t.Errorf("Location %q", r.Header.Get("Location"))
			}
		})
	}
}

func TestPlainHTTP(t *testing.T) {
	s := hosttest.Start(t, twoTenants())
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", "http://"+s.HTTPAddr()+"/docs/a%20b?q=1", nil)
	req.Host = "alice.example:8080"
	r := hosttest.Do(t, c, req)
	_, port, _ := net.SplitHostPort(s.HTTPSAddr())
	if want := "https://alice.example:" + port + "/docs/a%20b?q=1"; r.StatusCode != 308 || r.Header.Get("Location") != want {
		t.Errorf("redirect: %d %q, want 308 %q", r.StatusCode, r.Header.Get("Location"), want)
	}
	req.Host = "bob.example"
	req.URL.Path, req.URL.RawPath = "/", ""
	if r := hosttest.Do(t, c, req); r.StatusCode != 200 || r.Body != "bob home\n" {
		t.Errorf("allow_http: %d %q", r.StatusCode, r.Body)
	}
	req.Host = "evil.example"
	if r := hosttest.Do(t, c, req); r.StatusCode != 404 {
		t.Errorf("unknown host on HTTP: %d", r.StatusCode)
	}
}

// rawGet sends a request line exactly as given (no client-side cleaning)
// over TLS and returns the status code and body.
func rawGet(t *testing.T, addr, sni, target string) (int, string) {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, sni)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPathTraversal(t *testing.T) {
	files := twoTenants()
	s := hosttest.Start(t, files)
	// A symlink in alice's root pointing at bob's file, and one at /etc.
	aliceRoot := filepath.Join(s.Dir, "alice")
	if err := os.Symlink(filepath.Join(s.Dir, "bob/secret.txt"), filepath.Join(aliceRoot, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(aliceRoot, "etc")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("1k.txt", filepath.Join(aliceRoot, "inside.txt")); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{
		"/../bob/secret.txt",
		"/../../../../etc/passwd",
		"/%2e%2e/bob/secret.txt",
		"/%2E%2E/%2e%2e/etc/passwd",
		"/docs/..%2f..%2fbob/secret.txt",
		"/..%5c..%5cbob%5csecret.txt",
		"//etc/passwd",
		"/etc/passwd",
		"/link.txt",
		"/etc/passwd%00.html",
		"https://alice.example/../bob/secret.txt",
		"/etc/",
	} {
		code, body := rawGet(t, s.HTTPSAddr(), "alice.example", target)
		if strings.Contains(body, "bob secret") || strings.Contains(body, "root:") || code == 200 {
			t.Errorf("GET %s: %d %q leaks content", target, code, body)
		}
		if code != 400 && code != 403 && code != 404 {
			t.Errorf("GET %s: status %d, want 400/403/404", target, code)
		}
	}
	if code, body := rawGet(t, s.HTTPSAddr(), "alice.example", "/inside.txt"); code != 200 || len(body) != 1024 {
		t.Errorf("symlink inside the root: %d, %d bytes", code, len(body))
	}
}

func TestStaticValidatorsAndRanges(t *testing.T) {
	s := hosttest.Start(t, twoTenants())
	c := s.Client("alice.example", false)
	url := "https://alice.example/1k.txt"
	r := hosttest.Get(t, c, url)
	etag, lm := r.Header.Get("ETag"), r.Header.Get("Last-Modified")
	if r.StatusCode != 200 || len(r.Body) != 1024 || etag == "" || lm == "" || r.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("got %d, %d bytes, ETag %q, Last-Modified %q, type %q", r.StatusCode, len(r.Body), etag, lm, r.Header.Get("Content-Type"))
	}
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("If-None-Match", etag)
	if r := hosttest.Do(t, c, req); r.StatusCode != 304 {
		t.Errorf("If-None-Match: %d", r.StatusCode)
	}
	req, _ = http.NewRequest("GET", url, nil)
	req.Header.Set("If-Modified-Since", lm)
	if r := hosttest.Do(t, c, req); r.StatusCode != 304 {
		t.Errorf("If-Modified-Since: %d", r.StatusCode)
	}
	req, _ = http.NewRequest("GET", url, nil)
	req.Header.Set("Range", "bytes=10-19")
	if r := hosttest.Do(t, c, req); r.StatusCode != 206 || r.Body != strings.Repeat("a", 10) || r.Header.Get("Content-Range") != "bytes 10-19/1024" {
		t.Errorf("Range: %d %q %q", r.StatusCode, r.Body, r.Header.Get("Content-Range"))
	}
	req, _ = http.NewRequest("POST", url, strings.NewReader("x"))
	if r := hosttest.Do(t, c, req); r.StatusCode != 405 || r.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d", r.StatusCode)
	}
}

func TestSessionResumption(t *testing.T) {
	s := hosttest.Start(t, twoTenants())
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		tc := hosttest.TLSConfig("alice.example")
		tc.MaxVersion = v
		connect := func() tls.ConnectionState {
			conn, err := tls.Dial("tcp", s.HTTPSAddr(), tc)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// A request lets the client read the TLS 1.3 ticket.
			fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: alice.example\r\nConnection: close\r\n\r\n")
			io.Copy(io.Discard, conn)
			return conn.ConnectionState()
		}
		if st := connect(); st.DidResume || st.NegotiatedProtocol != "http/1.1" && st.NegotiatedProtocol != "h2" {
			t.Fatalf("first connection: resumed %v, ALPN %q", st.DidResume, st.NegotiatedProtocol)
		}
		if st := connect(); !st.DidResume {
			t.Errorf("TLS %x: second connection did not resume", v)
		}
	}
	// TLS 1.0/1.1 are refused.
	tc := hosttest.TLSConfig("alice.example")
	tc.MinVersion, tc.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	if conn, err := tls.Dial("tcp", s.HTTPSAddr(), tc); err == nil {
		conn.Close()
		t.Error("TLS 1.1 handshake succeeded")
	}
}

func TestAccessLog(t *testing.T) {
	s := hosttest.Start(t, twoTenants())
	c := s.Client("alice.example", false)
	req, _ := http.NewRequest("GET", "https://alice.example/1k.txt?a=\"b\"", nil)
	req.Header.Set("User-Agent", `test"agent\ x`)
	req.Header.Set("Referer", "https://ref.example/")
	resp := hosttest.Do(t, c, req)
	s.Stop()
	b, err := os.ReadFile(filepath.Join(s.Dir, "logs/access.log"))
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(string(b))
	if strings.Count(line, "\n") != 0 {
		t.Fatalf("a request wrote several lines: %q", line)
	}
	// HTTP/1.1 unless the run is HTTP/2 (HOSTD_TEST_HTTP=h2)
	for _, want := range []string{"alice.example 127.0.0.1 - - [", `"GET /1k.txt?a=\x22b\x22 ` + resp.Proto + `" 200 1024 "https://ref.example/" "test\x22agent\x5c x"`} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %q", line, want)
		}
	}
}

func TestSlowlorisTimeout(t *testing.T) {
	files := twoTenants()
	files["hostd.toml"] = hosttest.MainConfig + "read_header_timeout = \"300ms\"\n"
	s := hosttest.Start(t, files)
	conn, err := tls.Dial("tcp", s.HTTPSAddr(), &tls.Config{ServerName: "alice.example", InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: alice.example\r\n") // never finishes the header
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("server kept a half-sent request open for %v", time.Since(start))
	}
}

func TestRespond(t *testing.T) {
	files := twoTenants()
	files["vhosts.d/alice.toml"] += `
[[respond]]
path = "/native"
body = "Hello, world!\n"
content_type = "text/plain"
[[respond]]
path = "/gone/*"
status = 410
body = "gone\n"
`
	s := hosttest.Start(t, files)
	c := s.Client("alice.example", false)
	if r := hosttest.Get(t, c, "https://alice.example/native"); r.StatusCode != 200 || r.Body != "Hello, world!\n" || r.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("native: %d %q %q", r.StatusCode, r.Body, r.Header.Get("Content-Type"))
	}
	if r := hosttest.Get(t, c, "https://alice.example/gone/x"); r.StatusCode != 410 || r.Body != "gone\n" {
		t.Errorf("gone: %d %q", r.StatusCode, r.Body)
	}
	if r := hosttest.Get(t, c, "https://alice.example/"); r.Body != "alice home\n" {
		t.Errorf("static after respond: %q", r.Body)
	}
}

func TestGracefulShutdown(t *testing.T) {
	for _, tc := range []struct {
		name           string
		timeout, sleep string
		wantOK         bool
	}{
		{"in-flight request finishes", "5s", "1", true},
		{"stuck request is cut at the timeout", "500ms", "30", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := twoTenants()
			files["hostd.toml"] = strings.Replace(hosttest.MainConfig, `shutdown_timeout = "5s"`, `shutdown_timeout = "`+tc.timeout+`"`, 1)
			files["vhosts.d/alice.toml"] += "run_as_server = true\n[cgi]\nenabled = true\n"
			files["alice/slow.cgi"] = "#!/bin/sh\nsleep " + tc.sleep + "\nprintf 'Content-Type: text/plain\\n\\ndone\\n'\n"
			s := hosttest.Start(t, files)
			os.Chmod(filepath.Join(s.Dir, "alice/slow.cgi"), 0o755)
			// Not s.Client: Stop must not close this client's connection.
			c := hosttest.ClientTo(s.HTTPSAddr(), hosttest.TLSConfig("alice.example"), false)
			type result struct {
				code int
				body string
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := c.Get("https://alice.example/slow.cgi")
				if err != nil {
					done <- result{err: err}
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				done <- result{resp.StatusCode, string(b), err}
			}()
			s.WaitActive(t, "alice.example", 1) // the request is in flight
			start := time.Now()
			err := s.Stop()
			r := <-done
			if tc.wantOK {
				if err != nil || r.err != nil || r.code != 200 || r.body != "done\n" {
					t.Errorf("Stop: %v; request: %d %q %v", err, r.code, r.body, r.err)
				}
				return
			}
			if err == nil || r.code == 200 {
				t.Errorf("Stop: %v; request: %d %q %v; want a cut request and a timeout error", err, r.code, r.body, r.err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("shutdown took %v with shutdown_timeout %s", d, tc.timeout)
			}
		})
	}
}
