package cgi

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// Test tenants: numeric ids without passwd entries.
const (
	aliceUID = 31001
	bobUID   = 31002
)

var (
	alice = sandbox.Identity{UID: aliceUID, GID: aliceUID}
	bob   = sandbox.Identity{UID: bobUID, GID: bobUID}
)

// syncBuffer is a bytes.Buffer safe for concurrent use (log sinks).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// vhost is a test virtual host: a root in a temp dir, owned by root, with a
// "cgi" directory owned by owner.
type vhost struct {
	t        testing.TB
	base     string // temp dir holding root and files outside it
	root     string
	cgiDir   string
	logs     *syncBuffer // handler events
	errorLog *syncBuffer // script stderr
}

func newVhost(t testing.TB, owner uint32) *vhost {
	t.Helper()
	base := t.TempDir()
	// t.TempDir's parent is 0700: let tenants traverse.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	v := &vhost{t: t, base: base, root: filepath.Join(base, "www"), logs: &syncBuffer{}, errorLog: &syncBuffer{}}
	v.cgiDir = filepath.Join(v.root, "cgi")
	v.mkdir(v.root, 0, 0o755)
	v.mkdir(v.cgiDir, owner, 0o755)
	return v
}

func (v *vhost) mkdir(p string, owner uint32, mode os.FileMode) {
	v.t.Helper()
	if err := os.MkdirAll(p, mode); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Chown(p, int(owner), int(owner)); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		v.t.Fatal(err)
	}
}

// file writes p with content, owner and exact mode (umask aside).
func (v *vhost) file(p, content string, owner uint32, mode os.FileMode) string {
	v.t.Helper()
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Chown(p, int(owner), int(owner)); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		v.t.Fatal(err)
	}
	return p
}

// script writes an executable shell script into the cgi directory.
func (v *vhost) script(name, body string, owner uint32) string {
	return v.file(filepath.Join(v.cgiDir, name), "#!/bin/sh\n"+body, owner, 0o755)
}

func (v *vhost) config(s *sandbox.Spawner, id *sandbox.Identity) Config {
	return Config{
		Root:         v.root,
		FS:           gate(v.t, v.root),
		Extensions:   []string{".cgi", ".pl"},
		Interpreters: map[string]string{".php": "/usr/bin/php-cgi"},
		Spawner:      s,
		Identity:     id,
		SuEXEC:       id != nil,
		Logger:       slog.New(slog.NewTextHandler(v.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		ErrorLog:     v.errorLog,
	}
}

// gate returns a file gate over root with the test's identity, closed
// when the test ends.
func gate(t testing.TB, root string) *sandbox.FS {
	t.Helper()
	g, err := sandbox.NewDirectFS(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func newSpawner(t testing.TB) *sandbox.Spawner {
	t.Helper()
	s, err := sandbox.NewSpawner(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// serve starts a TLS test server for cfg; local redirects go back to the
// handler itself.
func serve(t testing.TB, cfg Config) (*httptest.Server, *http.Client) {
	t.Helper()
	var h *Handler
	if cfg.LocalRedirect == nil {
		cfg.LocalRedirect = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return srv, c
}

func get(t testing.TB, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	return resp, string(b)
}

const hdrText = `printf 'Content-Type: text/plain\n\n'` + "\n"

func TestServe(t *testing.T) {
	sandboxtest.RequireRoot(t)
	t.Setenv("HOSTD_TEST_SECRET", "server-env-must-not-leak")
	v := newVhost(t, aliceUID)
	bobSecret := v.file(filepath.Join(v.base, "bob-secret"), "bob's secret\n", bobUID, 0o600)

	v.script("hello.cgi", hdrText+"echo hello\n", aliceUID)
	v.script("env.cgi", hdrText+"env\n", aliceUID)
	v.script("echo.cgi", hdrText+"echo \"len=$CONTENT_LENGTH type=$CONTENT_TYPE\"\ncat\n", aliceUID)
	v.script("notfound.cgi", "printf 'Status: 404 Not Found\\nContent-Type: text/plain\\nX-Script: yes\\n\\nnope\\n'\n", aliceUID)
	v.script("local.cgi", "printf 'Location: /cgi/target.cgi?from=local\\n\\n'\n", aliceUID)
	v.script("target.cgi", hdrText+"echo \"target $REQUEST_METHOD $QUERY_STRING len=${CONTENT_LENGTH-unset}\"\n", aliceUID)
	v.script("absolute.cgi", "printf 'Location: https://example.com/elsewhere\\n\\n'\n", aliceUID)
	v.script("moved.cgi", "printf 'Status: 301 Moved\\nLocation: https://example.com/new\\nContent-Type: text/plain\\n\\nmoved\\n'\n", aliceUID)
	v.script("notype.cgi", "printf 'X-Foo: bar\\n\\nbody\\n'\n", aliceUID)
	v.script("garbage.cgi", "echo this is not a header\n", aliceUID)
	v.script("silent.cgi", "exit 0\n", aliceUID)
	v.script("id.cgi", hdrText+"id -u; id -g; id -G\n", aliceUID)
	v.script("status.cgi", hdrText+"cat /proc/self/status\n", aliceUID)
	v.script("steal.cgi", hdrText+"if cat "+bobSecret+"; then echo READ; else echo DENIED; fi\n", aliceUID)
	v.script("stderr.cgi", hdrText+"echo to-stderr-1 >&2\nprintf 'to-stderr-2' >&2\necho out\n", aliceUID)
	v.script("nocontent.cgi", "printf 'Status: 204 No Content\\n\\nignored body\\n'\n", aliceUID)
	v.script("crlf.cgi", "printf 'Content-Type: text/plain\\r\\nX-A: 1\\r\\n\\r\\ncrlf\\n'\n", aliceUID)
	v.script("hop.cgi", "printf 'Content-Type: text/plain\\nConnection: close\\nTransfer-Encoding: chunked\\n\\nok\\n'\n", aliceUID)
	v.file(filepath.Join(v.cgiDir, "noexec.cgi"), "#!/bin/sh\n"+hdrText+"echo ran\n", aliceUID, 0o644)
	v.file(filepath.Join(v.cgiDir, "perl.pl"), "#!/usr/bin/perl\nprint \"Content-Type: text/plain\\n\\nperl $ENV{QUERY_STRING} $>\\n\";\n", aliceUID, 0o755)
	v.file(filepath.Join(v.cgiDir, "data.txt"), "static\n", aliceUID, 0o644)
	v.mkdir(filepath.Join(v.cgiDir, "sub"), aliceUID, 0o755)
	v.script("sub/deep.cgi", hdrText+"echo \"deep $SCRIPT_NAME $PATH_INFO\"\n", aliceUID)

	srv, c := serve(t, v.config(newSpawner(t), &alice))
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	tests := []struct {
		name        string
		method      string
		path        string
		body        io.Reader
		header      map[string]string
		status      int
		contains    []string
		notContains []string
		respHeader  map[string]string
		match       []string // regular expressions the body must match
	}{
		{name: "hello", path: "/cgi/hello.cgi", status: 200, contains: []string{"hello\n"}},
		{
			name: "env", path: "/cgi/env.cgi/extra/path?a=1&b=%20x",
			header: map[string]string{"X-Foo": "bar", "Proxy": "http://evil:1/", "Cookie": "c=1", "Content-Type": "text/x-test"},
			status: 200,
			contains: []string{
				"QUERY_STRING=a=1&b=%20x\n", "PATH_INFO=/extra/path\n", "SCRIPT_NAME=/cgi/env.cgi\n",
				"HTTPS=on\n", "HTTP_X_FOO=bar\n", "GATEWAY_INTERFACE=CGI/1.1\n", "SERVER_SOFTWARE=hostd\n",
				"REDIRECT_STATUS=200\n", "REQUEST_METHOD=GET\n", "REQUEST_URI=/cgi/env.cgi/extra/path?a=1&b=%20x\n",
				"SCRIPT_FILENAME=" + filepath.Join(v.cgiDir, "env.cgi") + "\n", "DOCUMENT_ROOT=" + v.root + "\n",
				"PATH_TRANSLATED=" + filepath.Join(v.root, "extra/path") + "\n", "REMOTE_ADDR=127.0.0.1\n",
				"REMOTE_HOST=127.0.0.1\n", "REMOTE_PORT=", "SERVER_NAME=127.0.0.1\n", "SERVER_PORT=" + port + "\n",
				"SERVER_PROTOCOL=HTTP/1.1\n", "HTTP_COOKIE=c=1\n", "CONTENT_TYPE=text/x-test\n",
				"PATH=" + DefaultPath + "\n", "HTTP_HOST=127.0.0.1:" + port + "\n",
			},
			notContains: []string{"HTTP_PROXY", "HOSTD_TEST_SECRET", "server-env-must-not-leak", "CONTENT_LENGTH", "HTTP_CONTENT_TYPE", "GOCOVERDIR", "HOME="},
		},
		{
			name: "post echo", method: "POST", path: "/cgi/echo.cgi", body: strings.NewReader("posted data"),
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, status: 200,
			contains: []string{"len=11 type=application/x-www-form-urlencoded\nposted data"},
		},
		{
			name: "chunked post echo", method: "POST", path: "/cgi/echo.cgi", body: io.MultiReader(strings.NewReader("chunked "), strings.NewReader("data")),
			status: 200, contains: []string{"len=12 type=\nchunked data"},
		},
		{name: "body too large", method: "POST", path: "/cgi/echo.cgi", body: strings.NewReader(strings.Repeat("x", DefaultMaxBody+1)), status: 413},
		{name: "chunked body too large", method: "POST", path: "/cgi/echo.cgi", body: io.MultiReader(strings.NewReader(strings.Repeat("x", DefaultMaxBody)), strings.NewReader("y")), status: 413},
		{name: "status passthrough", path: "/cgi/notfound.cgi", status: 404, contains: []string{"nope\n"}, respHeader: map[string]string{"X-Script": "yes", "Content-Type": "text/plain"}},
		{name: "local redirect", method: "POST", path: "/cgi/local.cgi", body: strings.NewReader("dropped"), status: 200, contains: []string{"target GET from=local len=unset\n"}},
		{name: "client redirect", path: "/cgi/absolute.cgi", status: 302, respHeader: map[string]string{"Location": "https://example.com/elsewhere"}},
		{name: "redirect with status", path: "/cgi/moved.cgi", status: 301, contains: []string{"moved\n"}, respHeader: map[string]string{"Location": "https://example.com/new"}},
		{name: "missing content type", path: "/cgi/notype.cgi", status: 500, notContains: []string{"body", v.root, "Content-Type"}},
		{name: "not a header", path: "/cgi/garbage.cgi", status: 500, notContains: []string{"this is not", v.root}},
		{name: "no output", path: "/cgi/silent.cgi", status: 500},
		{name: "runs as alice", path: "/cgi/id.cgi", status: 200, contains: []string{"31001\n31001\n31001\n"}},
		{name: "no capabilities", path: "/cgi/status.cgi", status: 200, contains: []string{
			"CapEff:\t0000000000000000\n", "CapPrm:\t0000000000000000\n", "CapAmb:\t0000000000000000\n",
			"NoNewPrivs:\t1\n", "Uid:\t31001\t31001\t31001\t31001\n",
		}, match: []string{`(?m)^Groups:\s*$`}},
		{name: "cannot read bob's file", path: "/cgi/steal.cgi", status: 200, contains: []string{"DENIED"}, notContains: []string{"bob's secret", "READ"}},
		{name: "stderr", path: "/cgi/stderr.cgi", status: 200, contains: []string{"out\n"}, notContains: []string{"to-stderr"}},
		{name: "no content", path: "/cgi/nocontent.cgi", status: 204, notContains: []string{"ignored"}},
		{name: "crlf headers", path: "/cgi/crlf.cgi", status: 200, contains: []string{"crlf\n"}, respHeader: map[string]string{"X-A": "1"}},
		{name: "hop-by-hop headers dropped", path: "/cgi/hop.cgi", status: 200, contains: []string{"ok\n"}},
		{name: "not executable", path: "/cgi/noexec.cgi", status: 403, notContains: []string{"ran", v.root}},
		{name: "perl", path: "/cgi/perl.pl?q=1", status: 200, contains: []string{"perl q=1 31001\n"}},
		{name: "not a script", path: "/cgi/data.txt", status: 404, notContains: []string{"static"}},
		{name: "directory", path: "/cgi/sub/", status: 404},
		{name: "missing", path: "/cgi/nothere.cgi", status: 404},
		{name: "nested with path info", path: "/cgi/sub/deep.cgi/x/", status: 200, contains: []string{"deep /cgi/sub/deep.cgi /x/\n"}},
		{name: "double slash", path: "/cgi//sub/deep.cgi", status: 200, contains: []string{"deep /cgi//sub/deep.cgi \n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "GET"
			}
			req, err := http.NewRequest(method, srv.URL+tt.path, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.body != nil && !isSized(tt.body) {
				req.ContentLength = -1 // chunked
			}
			for k, hv := range tt.header {
				req.Header.Set(k, hv)
			}
			resp, body := get(t, c, req)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %q; log:\n%s", resp.StatusCode, tt.status, body, v.logs.String())
			}
			for _, s := range tt.contains {
				if !strings.Contains(body, s) {
					t.Errorf("body lacks %q:\n%s", s, body)
				}
			}
			for _, s := range tt.notContains {
				if strings.Contains(body, s) {
					t.Errorf("body contains %q:\n%s", s, body)
				}
			}
			for _, re := range tt.match {
				if !regexp.MustCompile(re).MatchString(body) {
					t.Errorf("body does not match %s:\n%s", re, body)
				}
			}
			for k, want := range tt.respHeader {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
		})
	}

	// Side effects seen in the logs.
	if el := v.errorLog.String(); !strings.Contains(el, filepath.Join(v.cgiDir, "stderr.cgi")+": to-stderr-1\n") ||
		!strings.Contains(el, filepath.Join(v.cgiDir, "stderr.cgi")+": to-stderr-2\n") {
		t.Errorf("error log lacks the script's stderr lines:\n%s", el)
	}
	if el := v.errorLog.String(); !strings.Contains(el, "steal.cgi: cat: "+bobSecret+": Permission denied") {
		t.Errorf("error log lacks cat's refusal:\n%s", el)
	}
	logs := v.logs.String()
	for _, want := range []string{"no Content-Type", "not executable", "no output", "malformed header line"} {
		if !strings.Contains(logs, want) {
			t.Errorf("handler log lacks %q:\n%s", want, logs)
		}
	}
}

// isSized reports whether http.NewRequest can tell the body's length.
func isSized(r io.Reader) bool {
	switch r.(type) {
	case *strings.Reader, *bytes.Reader, *bytes.Buffer:
		return true
	}
	return false
}

func TestSuEXECRefusals(t *testing.T) {
	sandboxtest.RequireRoot(t)
	v := newVhost(t, aliceUID)
	outside := filepath.Join(v.base, "outside")
	v.mkdir(outside, aliceUID, 0o755)
	v.file(filepath.Join(outside, "evil.cgi"), "#!/bin/sh\n"+hdrText+"echo evil\n", aliceUID, 0o755)
	if err := os.Symlink(filepath.Join(outside, "evil.cgi"), filepath.Join(v.cgiDir, "link.cgi")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(v.root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	v.script("ok.cgi", hdrText+"echo ok\n", aliceUID)
	v.script("bobs.cgi", hdrText+"echo ran\n", bobUID)
	v.file(filepath.Join(v.cgiDir, "ww.cgi"), "#!/bin/sh\n"+hdrText+"echo ran\n", aliceUID, 0o757)
	v.file(filepath.Join(v.cgiDir, "gw.cgi"), "#!/bin/sh\n"+hdrText+"echo ran\n", aliceUID, 0o775)
	v.file(filepath.Join(v.cgiDir, "suid.cgi"), "#!/bin/sh\n"+hdrText+"echo ran\n", aliceUID, 0o755|os.ModeSetuid)
	openDir := filepath.Join(v.root, "open")
	v.mkdir(openDir, aliceUID, 0o777)
	v.file(filepath.Join(openDir, "s.cgi"), "#!/bin/sh\n"+hdrText+"echo ran\n", aliceUID, 0o755)
	bobDir := filepath.Join(v.root, "bobdir")
	v.mkdir(bobDir, bobUID, 0o755)
	v.file(filepath.Join(bobDir, "s.cgi"), "#!/bin/sh\n"+hdrText+"echo ran\n", aliceUID, 0o755)
	// A symlink inside the root to a script inside the root is fine.
	if err := os.Symlink("ok.cgi", filepath.Join(v.cgiDir, "inside.cgi")); err != nil {
		t.Fatal(err)
	}

	sp := newSpawner(t)
	lowUID := sandbox.Identity{UID: 500, GID: 500}
	tests := []struct {
		name   string
		id     *sandbox.Identity
		minUID uint32
		path   string
		status int
		reason string
	}{
		{"allowed", &alice, 0, "/cgi/ok.cgi", 200, ""},
		{"symlink inside root", &alice, 0, "/cgi/inside.cgi", 200, ""},
		{"wrong owner", &alice, 0, "/cgi/bobs.cgi", 403, "owned by uid 31002, not the tenant uid 31001"},
		{"owner is other tenant", &bob, 0, "/cgi/ok.cgi", 403, "owned by uid 31001, not the tenant uid 31002"},
		{"world-writable script", &alice, 0, "/cgi/ww.cgi", 403, "group- or world-writable (mode 0757)"},
		{"group-writable script", &alice, 0, "/cgi/gw.cgi", 403, "group- or world-writable (mode 0775)"},
		{"set-uid script", &alice, 0, "/cgi/suid.cgi", 403, "set-uid"},
		{"world-writable directory", &alice, 0, "/open/s.cgi", 403, "directory is group- or world-writable"},
		{"directory of another tenant", &alice, 0, "/bobdir/s.cgi", 403, "directory is owned by uid 31002"},
		{"uid below MinUID", &lowUID, 0, "/cgi/ok.cgi", 500, "below the minimum uid 1000"},
		{"uid below raised MinUID", &alice, 40000, "/cgi/ok.cgi", 500, "below the minimum uid 40000"},
		{"symlink out of root", &alice, 0, "/cgi/link.cgi", 403, "outside the root"},
		{"directory symlink out of root", &alice, 0, "/linkdir/evil.cgi", 403, "outside the root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v.logs.Reset()
			cfg := v.config(sp, tt.id)
			cfg.MinUID = tt.minUID
			srv, c := serve(t, cfg)
			req, _ := http.NewRequest("GET", srv.URL+tt.path, nil)
			resp, body := get(t, c, req)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %q; log:\n%s", resp.StatusCode, tt.status, body, v.logs.String())
			}
			if tt.status != 200 {
				if strings.Contains(body, "ran") || strings.Contains(body, "evil") || strings.Contains(body, v.base) {
					t.Errorf("refused request leaked output or paths: %q", body)
				}
				if logs := v.logs.String(); !strings.Contains(logs, tt.reason) {
					t.Errorf("log lacks reason %q:\n%s", tt.reason, logs)
				}
			}
		})
	}
}

func TestModeNone(t *testing.T) {
	sandboxtest.RequireRoot(t)
	v := newVhost(t, 0)
	v.script("id.cgi", hdrText+"id -u\ngrep -E '^(NoNewPrivs|CapEff)' /proc/self/status\n", 0)
	// Owned by another uid and group-writable: no suEXEC checks in mode none.
	v.file(filepath.Join(v.cgiDir, "any.cgi"), "#!/bin/sh\n"+hdrText+"echo any\n", bobUID, 0o775)
	srv, c := serve(t, v.config(newSpawner(t), nil))
	req, _ := http.NewRequest("GET", srv.URL+"/cgi/id.cgi", nil)
	resp, body := get(t, c, req)
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "0\n") || !strings.Contains(body, "NoNewPrivs:\t1") {
		t.Errorf("mode none: %d %q, want uid 0 with NoNewPrivs 1", resp.StatusCode, body)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/cgi/any.cgi", nil)
	if resp, body := get(t, c, req); resp.StatusCode != 200 || body != "any\n" {
		t.Errorf("mode none, foreign script: %d %q", resp.StatusCode, body)
	}
}

// groupAlive reports whether a live (not zombie) process is in group pgid.
func groupAlive(t testing.TB, pgid int) bool {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 3 && f[0] != "Z" && f[0] != "X" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

func readPid(t *testing.T, p string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(p)
		if n, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTimeout(t *testing.T) {
	sandboxtest.RequireRoot(t)
	v := newVhost(t, aliceUID)
	run := filepath.Join(v.base, "run")
	v.mkdir(run, aliceUID, 0o755)
	// The shell records its pid (= the group id) and a background
	// grandchild's, then sleeps; before the headers or after part of the body.
	v.script("slow.cgi", "echo $$ > "+run+"/slow.pid\nsleep 100 &\necho $! > "+run+"/slow.gpid\nexec sleep 100\n", aliceUID)
	v.script("slowbody.cgi", hdrText+"echo partial\necho $$ > "+run+"/slowbody.pid\nsleep 100 &\nexec sleep 100\n", aliceUID)
	cfg := v.config(newSpawner(t), &alice)
	cfg.Timeout = 500 * time.Millisecond
	srv, c := serve(t, cfg)

	t.Run("before headers", func(t *testing.T) {
		start := time.Now()
		req, _ := http.NewRequest("GET", srv.URL+"/cgi/slow.cgi", nil)
		resp, body := get(t, c, req)
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Errorf("status %d (%q), want 504", resp.StatusCode, body)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("request took %v", d)
		}
		pgid, gpid := readPid(t, run+"/slow.pid"), readPid(t, run+"/slow.gpid")
		// SIGKILL was sent before the response; let the kernel finish.
		deadline := time.Now().Add(2 * time.Second)
		for groupAlive(t, pgid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if groupAlive(t, pgid) {
			t.Errorf("process group %d (grandchild %d) alive after the response", pgid, gpid)
		}
		if !strings.Contains(v.logs.String(), "time limit exceeded before the headers") {
			t.Errorf("timeout not logged:\n%s", v.logs.String())
		}
	})
	t.Run("during body", func(t *testing.T) {
		req, _ := http.NewRequest("GET", srv.URL+"/cgi/slowbody.cgi", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d, want 200 (headers were sent)", resp.StatusCode)
		}
		b, err := io.ReadAll(resp.Body)
		if err == nil {
			t.Errorf("body %q read without error: a cut response must not look complete", b)
		}
		if !strings.HasPrefix(string(b), "partial\n") {
			t.Errorf("body %q, want the partial output", b)
		}
		pgid := readPid(t, run+"/slowbody.pid")
		deadline := time.Now().Add(2 * time.Second)
		for groupAlive(t, pgid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if groupAlive(t, pgid) {
			t.Errorf("process group %d alive after the time limit", pgid)
		}
		if !strings.Contains(v.logs.String(), "time limit exceeded while sending the body") {
			t.Errorf("timeout not logged:\n%s", v.logs.String())
		}
	})
}

func TestLeftoverProcessesKilled(t *testing.T) {
	sandboxtest.RequireRoot(t)
	v := newVhost(t, aliceUID)
	run := filepath.Join(v.base, "run")
	v.mkdir(run, aliceUID, 0o755)
	v.script("bg.cgi", hdrText+"sleep 100 >/dev/null 2>&1 &\necho $$ > "+run+"/pid\necho done\n", aliceUID)
	srv, c := serve(t, v.config(newSpawner(t), &alice))
	req, _ := http.NewRequest("GET", srv.URL+"/cgi/bg.cgi", nil)
	if resp, body := get(t, c, req); resp.StatusCode != 200 || body != "done\n" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	pgid := readPid(t, run+"/pid")
	deadline := time.Now().Add(2 * time.Second)
	for groupAlive(t, pgid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if groupAlive(t, pgid) {
		t.Errorf("background process of group %d outlived the request", pgid)
	}
}

func TestNoLeakedFDs(t *testing.T) {
	sandboxtest.RequireRoot(t)
	v := newVhost(t, aliceUID)
	v.script("fds.cgi", hdrText+"exec /usr/bin/find /proc/self/fd/ -mindepth 1 -maxdepth 1 -printf '%f %l\\n'\n", aliceUID)
	secret := v.file(filepath.Join(v.base, "held"), "held open\n", 0, 0o600)
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, id := range []*sandbox.Identity{&alice, nil} {
		cfg := v.config(newSpawner(t), id)
		srv, c := serve(t, cfg)
		req, _ := http.NewRequest("POST", srv.URL+"/cgi/fds.cgi", strings.NewReader("body on stdin"))
		resp, body := get(t, c, req)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %q\n%s", resp.StatusCode, body, v.logs.String())
		}
		var fds []int
		for line := range strings.Lines(body) {
			num, target, _ := strings.Cut(strings.TrimSpace(line), " ")
			n, err := strconv.Atoi(num)
			if err != nil {
				t.Fatalf("bad line %q", line)
			}
			fds = append(fds, n)
			if n > 2 && !strings.HasPrefix(target, "/proc/") && target != v.cgiDir {
				t.Errorf("identity %v: child has fd %d -> %s", id != nil, n, target)
			}
			if n <= 2 && !strings.HasPrefix(target, "pipe:") {
				t.Errorf("identity %v: fd %d -> %s, want a pipe", id != nil, n, target)
			}
		}
		if !slices.Equal(fds[:min(3, len(fds))], []int{0, 1, 2}) {
			t.Errorf("fds %v, want 0, 1, 2 first", fds)
		}
	}
}

func TestPHP(t *testing.T) {
	sandboxtest.RequireRoot(t)
	const phpCGI = "/usr/bin/php-cgi"
	if _, err := os.Stat(phpCGI); err != nil {
		sandboxtest.Skipf(t, "php-cgi not installed (Debian package php-cgi)")
	}
	v := newVhost(t, aliceUID)
	v.file(filepath.Join(v.cgiDir, "info.php"), `<?php header("X-Php: yes"); echo "php ", $_GET["q"], " ", $_SERVER["PATH_INFO"], " ", $_SERVER["SCRIPT_NAME"], " ", function_exists("posix_geteuid") ? posix_geteuid() : getmyuid(), "\n";`, aliceUID, 0o644)
	srv, c := serve(t, v.config(newSpawner(t), &alice))
	req, _ := http.NewRequest("GET", srv.URL+"/cgi/info.php/pi?q=hi", nil)
	resp, body := get(t, c, req)
	if resp.StatusCode != 200 || body != "php hi /pi /cgi/info.php 31001\n" || resp.Header.Get("X-Php") != "yes" {
		t.Errorf("php: %d %q %v\nlog:\n%s\nerrors:\n%s", resp.StatusCode, body, resp.Header, v.logs.String(), v.errorLog.String())
	}
	// A query without '=' must not become php-cgi arguments (CVE-2012-1823).
	req, _ = http.NewRequest("GET", srv.URL+"/cgi/info.php?-s", nil)
	if resp, body := get(t, c, req); resp.StatusCode != 200 || strings.Contains(body, "<?php") {
		t.Errorf("php with ?-s: %d %q", resp.StatusCode, body)
	}
}

func TestLocalRedirectLoop(t *testing.T) {
	sandboxtest.RequireRoot(t)
	v := newVhost(t, aliceUID)
	v.script("loop.cgi", "printf 'Location: /cgi/loop.cgi\\n\\n'\n", aliceUID)
	srv, c := serve(t, v.config(newSpawner(t), &alice))
	req, _ := http.NewRequest("GET", srv.URL+"/cgi/loop.cgi", nil)
	if resp, _ := get(t, c, req); resp.StatusCode != 500 {
		t.Errorf("redirect loop: status %d, want 500", resp.StatusCode)
	}
	if !strings.Contains(v.logs.String(), "too many local redirects") {
		t.Errorf("loop not logged:\n%s", v.logs.String())
	}
}

func TestResolve(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"cgi/sub", "cgi/dir.cgi"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"cgi/app.cgi", "cgi/sub/x.php", "cgi/page.html", "cgi/dir.cgi/real.cgi"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sp := &sandbox.Spawner{} // never started: Resolve does not spawn
	h, err := New(Config{Root: root, FS: gate(t, root), Spawner: sp, Extensions: []string{".cgi"}, Interpreters: map[string]string{".php": "/usr/bin/php-cgi"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path        string
		name, info  string
		interpreter string
		err         error
	}{
		{"/cgi/app.cgi", "/cgi/app.cgi", "", "", nil},
		{"/cgi/app.cgi/extra/path", "/cgi/app.cgi", "/extra/path", "", nil},
		{"/cgi/app.cgi/", "/cgi/app.cgi", "/", "", nil},
		{"/cgi/sub/x.php/a", "/cgi/sub/x.php", "/a", "/usr/bin/php-cgi", nil},
		{"/cgi/dir.cgi/real.cgi/p", "/cgi/dir.cgi/real.cgi", "/p", "", nil},
		{"/cgi/page.html", "", "", "", ErrNotScript},
		{"/cgi/page.html/x.cgi", "", "", "", ErrNotScript},
		{"/cgi/sub", "", "", "", ErrNotScript},
		{"/", "", "", "", ErrNotScript},
		{"/cgi/missing.cgi", "", "", "", ErrNotFound},
		{"/cgi/../cgi/app.cgi", "", "", "", ErrForbidden},
		{"/cgi/app.cgi/../../etc/passwd", "", "", "", ErrForbidden},
		{"/cgi/./app.cgi", "", "", "", ErrForbidden},
		{"/cgi/app.cgi\x00", "", "", "", ErrForbidden},
		{"cgi/app.cgi", "", "", "", ErrForbidden},
	}
	for _, tt := range tests {
		s, err := h.Resolve(tt.path)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("Resolve(%q) = %+v, %v; want %v", tt.path, s, err, tt.err)
			}
			continue
		}
		if err != nil || s.Name != tt.name || s.PathInfo != tt.info || s.Interpreter != tt.interpreter ||
			s.Filename != filepath.Join(root, tt.name) {
			t.Errorf("Resolve(%q) = %+v, %v; want name %q, path info %q, interpreter %q", tt.path, s, err, tt.name, tt.info, tt.interpreter)
		}
	}
}

func TestNewErrors(t *testing.T) {
	sp := &sandbox.Spawner{}
	g := gate(t, t.TempDir())
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no spawner", Config{Root: "/srv", FS: g}},
		{"no gate", Config{Root: "/srv", Spawner: sp}},
		{"relative root", Config{Root: "srv", Spawner: sp, FS: g}},
		{"suexec without identity", Config{Root: "/srv", Spawner: sp, FS: g, SuEXEC: true}},
		{"identity without suexec", Config{Root: "/srv", Spawner: sp, FS: g, Identity: &alice}},
		{"bad extension", Config{Root: "/srv", Spawner: sp, FS: g, Extensions: []string{"cgi"}}},
		{"relative interpreter", Config{Root: "/srv", Spawner: sp, FS: g, Interpreters: map[string]string{".php": "php-cgi"}}},
		{"extension twice", Config{Root: "/srv", Spawner: sp, FS: g, Extensions: []string{".php"}, Interpreters: map[string]string{".php": "/usr/bin/php-cgi"}}},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg); err == nil || !strings.HasPrefix(err.Error(), "cgi: config: ") {
			t.Errorf("%s: New = %v, want a cgi: config: error", tt.name, err)
		}
	}
}

func TestHeaderEnvName(t *testing.T) {
	tests := []struct {
		in, out string
		ok      bool
	}{
		{"X-Foo", "HTTP_X_FOO", true},
		{"User-Agent", "HTTP_USER_AGENT", true},
		{"x-lower-9", "HTTP_X_LOWER_9", true},
		{"X_Foo", "", false},
		{"X.Foo", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if out, ok := headerEnvName(tt.in); out != tt.out || ok != tt.ok {
			t.Errorf("headerEnvName(%q) = %q, %v; want %q, %v", tt.in, out, ok, tt.out, tt.ok)
		}
	}
}

func TestReadHeaders(t *testing.T) {
	tests := []struct {
		in   string
		want http.Header
		err  bool
	}{
		{"Content-Type: text/plain\n\nbody", http.Header{"Content-Type": {"text/plain"}}, false},
		{"A: 1\r\nA: 2\r\nB:3 \r\n\r\n", http.Header{"A": {"1", "2"}, "B": {"3"}}, false},
		{"", nil, true},
		{"Content-Type: text/plain\n", nil, true},
		{"no colon\n\n", nil, true},
		{"Bad Name: x\n\n", nil, true},
		{"A: x\x01y\n\n", nil, true},
		{strings.Repeat("A: 1\n", maxHeaderLines+1) + "\n", nil, true},
		{"A: " + strings.Repeat("x", 9000) + "\n\n", nil, true},
	}
	for _, tt := range tests {
		got, err := readHeaders(bufioReader(tt.in))
		if (err != nil) != tt.err || (!tt.err && !headerEqual(got, tt.want)) {
			t.Errorf("readHeaders(%.40q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReaderSize(strings.NewReader(s), 4096) }

func headerEqual(a, b http.Header) bool {
	return maps.EqualFunc(a, b, slices.Equal)
}

func TestParseStatus(t *testing.T) {
	tests := []struct {
		in   string
		code int
		ok   bool
	}{
		{"404 Not Found", 404, true}, {"200", 200, true}, {"599 x", 599, true},
		{"100 Continue", 0, false}, {"600", 0, false}, {"abc", 0, false}, {"2000", 0, false}, {"", 0, false},
	}
	for _, tt := range tests {
		if code, ok := parseStatus(tt.in); code != tt.code || ok != tt.ok {
			t.Errorf("parseStatus(%q) = %d, %v; want %d, %v", tt.in, code, ok, tt.code, tt.ok)
		}
	}
}

func TestLineWriter(t *testing.T) {
	var lines []string
	lw := &lineWriter{emit: func(b []byte) { lines = append(lines, string(b)) }}
	for _, p := range []string{"a\nb", "c\r\n\n", strings.Repeat("x", maxStderrLine+3), "\nlast"} {
		if _, err := lw.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	lw.flush()
	want := []string{"a", "bc", strings.Repeat("x", maxStderrLine), "xxx", "last"}
	if !slices.Equal(lines, want) {
		t.Errorf("lines = %q, want %q", lines, want)
	}

	// The volume is bounded.
	lines = nil
	lw = &lineWriter{emit: func(b []byte) { lines = append(lines, string(b)) }}
	line := strings.Repeat("y", 99) + "\n"
	for range 2 * maxStderrBytes / len(line) {
		if n, err := lw.Write([]byte(line)); n != len(line) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	lw.flush()
	if got, max := len(lines), maxStderrBytes/len(line)+2; got > max || lines[got-1] != "(further stderr output dropped)" {
		t.Errorf("%d lines, last %q; want at most %d ending with the drop notice", got, lines[got-1], max)
	}
}

func BenchmarkServeHello(b *testing.B) {
	sandboxtest.RequireRoot(b)
	v := newVhost(b, aliceUID)
	v.script("hello.cgi", hdrText+"echo hello\n", aliceUID)
	sp := newSpawner(b)
	for _, bc := range []struct {
		name string
		id   *sandbox.Identity
	}{{"server", nil}, {"tenant", &alice}} {
		b.Run(bc.name, func(b *testing.B) {
			h, err := New(v.config(sp, bc.id))
			if err != nil {
				b.Fatal(err)
			}
			req := httptest.NewRequest("GET", "/cgi/hello.cgi", nil)
			req.TLS = &tls.ConnectionState{}
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 200 || w.Body.String() != "hello\n" {
					b.Fatalf("%d %q", w.Code, w.Body.String())
				}
			}
		})
	}
}

func TestPlainHTTPAndHTTP2(t *testing.T) {
	sandboxtest.RequireRoot(t)
	v := newVhost(t, aliceUID)
	v.script("env.cgi", hdrText+"env\n", aliceUID)
	sp := newSpawner(t)

	cfg := v.config(sp, &alice)
	cfg.ErrorLog = nil // stderr lines then go to Logger
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	plain := httptest.NewServer(h)
	defer plain.Close()
	req, _ := http.NewRequest("GET", plain.URL+"/cgi/env.cgi", nil)
	resp, body := get(t, plain.Client(), req)
	if resp.StatusCode != 200 || strings.Contains(body, "HTTPS=") || !strings.Contains(body, "REQUEST_SCHEME=http\n") {
		t.Errorf("plain http: %d, env:\n%s", resp.StatusCode, body)
	}

	h2 := httptest.NewUnstartedServer(h)
	h2.EnableHTTP2 = true
	h2.StartTLS()
	defer h2.Close()
	req, _ = http.NewRequest("GET", h2.URL+"/cgi/env.cgi", nil)
	resp, body = get(t, h2.Client(), req)
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 || !strings.Contains(body, "SERVER_PROTOCOL=HTTP/2.0\n") || !strings.Contains(body, "HTTPS=on\n") {
		t.Errorf("http/2: %d %s, env:\n%s", resp.StatusCode, resp.Proto, body)
	}
}

func TestStderrToLogger(t *testing.T) {
	sandboxtest.RequireRoot(t)
	v := newVhost(t, aliceUID)
	v.script("err.cgi", hdrText+"echo visible-in-log >&2\necho ok\n", aliceUID)
	cfg := v.config(newSpawner(t), &alice)
	cfg.ErrorLog = nil
	srv, c := serve(t, cfg)
	req, _ := http.NewRequest("GET", srv.URL+"/cgi/err.cgi", nil)
	if resp, body := get(t, c, req); resp.StatusCode != 200 || body != "ok\n" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if logs := v.logs.String(); !strings.Contains(logs, "line=visible-in-log") || !strings.Contains(logs, "script=/cgi/err.cgi") {
		t.Errorf("stderr line not in the handler log:\n%s", logs)
	}
}

// TestStreaming checks that output reaches the client while the script runs:
// the script only finishes after the client has seen its first line.
func TestStreaming(t *testing.T) {
	sandboxtest.RequireRoot(t)
	v := newVhost(t, aliceUID)
	run := filepath.Join(v.base, "run")
	v.mkdir(run, aliceUID, 0o755)
	v.script("stream.cgi", hdrText+"echo first\nwhile [ ! -e "+run+"/go ]; do sleep 0.02; done\necho second\n", aliceUID)
	cfg := v.config(newSpawner(t), &alice)
	cfg.Timeout = 10 * time.Second
	srv, c := serve(t, cfg)
	req, _ := http.NewRequest("GET", srv.URL+"/cgi/stream.cgi", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, len("first\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first\n" {
		t.Fatalf("first line %q, %v", first, err)
	}
	if err := os.WriteFile(run+"/go", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "second\n" {
		t.Errorf("rest %q, %v", rest, err)
	}
}
