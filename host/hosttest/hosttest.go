package hosttest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostd/hostd/host"
	"github.com/hostd/hostd/sandbox/sandboxtest"
	"github.com/hostd/hostd/tenant"
)

// Files maps a path relative to the setup directory to its content. The
// main file is "hostd.toml"; a path ending in "/" makes a directory.
type Files map[string]string

// Write writes files under dir.
func Write(t testing.TB, dir string, files Files) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Main is the main file of Start: listening on ephemeral loopback ports,
// the access log in logs/access.log. Tests that set [server] keys change
// a copy and write it with TOML.
func Main() tenant.MainFile {
	return tenant.MainFile{Server: tenant.Server{ListenHTTPS: "127.0.0.1:0", ListenHTTP: "127.0.0.1:0",
		VHosts: "vhosts.d/*.toml", AccessLog: "logs/access.log", ShutdownTimeout: tenant.Duration(5 * time.Second)}}
}

// TOML returns v, a tenant.MainFile or tenant.VHost, as a file for Files
// (tenant.Encode).
func TOML(t testing.TB, v any) string {
	t.Helper()
	var b strings.Builder
	if err := tenant.Encode(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// MainConfig is Main as text, for tests that append [server] keys to it
// (a test checks it is what TOML(t, Main()) writes).
const MainConfig = `[server]
listen_https = "127.0.0.1:0"
listen_http = "127.0.0.1:0"
vhosts = "vhosts.d/*.toml"
access_log = "logs/access.log"
shutdown_timeout = "5s"
`

// Server is a running hostd server.
type Server struct {
	*host.Server
	Dir    string
	Config *tenant.Config
	Logs   *LogBuffer
	cancel context.CancelFunc
	done   chan error

	mu    sync.Mutex
	conns []net.Conn // the test clients' connections, closed before the server stops
}

// Start writes files into a new temp dir (adding Main as hostd.toml
// unless files has one), loads it and serves it until the test ends.
func Start(t testing.TB, files Files) *Server {
	t.Helper()
	dir := t.TempDir()
	if _, ok := files["hostd.toml"]; !ok {
		files["hostd.toml"] = TOML(t, Main())
	}
	Write(t, dir, files)
	return StartDir(t, dir)
}

// StartDir serves the configuration in dir/hostd.toml until the test ends.
func StartDir(t testing.TB, dir string) *Server {
	t.Helper()
	cfg, err := tenant.Load(filepath.Join(dir, "hostd.toml"))
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	logs := &LogBuffer{}
	srv, err := host.New(cfg, host.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatalf("listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Server: srv, Dir: dir, Config: cfg, Logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	return s
}

// WaitActive waits until vhost (a server_name) has n requests in progress,
// such as slow requests the test started in goroutines.
func (s *Server) WaitActive(t testing.TB, vhost string, n int64) {
	t.Helper()
	sandboxtest.WaitFor(t, fmt.Sprintf("%d requests in progress on %s", n, vhost), func() bool {
		return s.Status().VHosts[vhost].Active >= n
	})
}

// Stop shuts the server down and returns Serve's error. It is idempotent.
func (s *Server) Stop() error {
	// Drop the test clients' connections first, as a browser does on
	// GOAWAY, so shutdown measures the server, not the client. Requests
	// still in flight were the test's to wait for.
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
	s.mu.Unlock()
	s.cancel()
	select {
	case err, ok := <-s.done:
		if ok {
			close(s.done)
			return err
		}
		return nil
	case <-time.After(15 * time.Second):
		return context.DeadlineExceeded
	}
}

// TLSConfig returns a client TLS config sending sni, trusting any
// certificate (tests inspect it), with a session cache for resumption.
func TLSConfig(sni string) *tls.Config {
	return &tls.Config{
		ServerName:         sni,
		InsecureSkipVerify: true,
		ClientSessionCache: tls.NewLRUClientSessionCache(16),
		NextProtos:         []string{"h2", "http/1.1"},
	}
}

// Client returns an HTTPS client that connects every request to the
// server's HTTPS address with SNI sni, whatever the URL's host says, and
// does not follow redirects. h2 selects HTTP/2.
func (s *Server) Client(sni string, h2 bool) *http.Client {
	c := ClientTo(s.HTTPSAddr(), TLSConfig(sni), h2)
	tr := c.Transport.(*http.Transport)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err == nil {
			s.mu.Lock()
			s.conns = append(s.conns, conn)
			s.mu.Unlock()
		}
		return conn, err
	}
	return c
}

// ClientTo is Client for any address and TLS config.
//
// HOSTD_TEST_HTTP=h1 or h2 in the environment overrides h2 for every
// client, so the whole suite can run on one transport: hostd's HTTP/1.1
// path or net/http's HTTP/2 (`make test` runs host's tests both ways).
func ClientTo(addr string, tc *tls.Config, h2 bool) *http.Client {
	switch os.Getenv("HOSTD_TEST_HTTP") {
	case "h1":
		h2 = false
	case "h2":
		h2 = true
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
		TLSClientConfig:     tc,
		ForceAttemptHTTP2:   h2,
		MaxIdleConnsPerHost: 64,
	}
	if !h2 {
		tr.TLSClientConfig = tc.Clone()
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Response is what a test sees of a response.
type Response struct {
	*http.Response
	Body string
}

// Get fetches url with c and reads the whole body.
func Get(t testing.TB, c *http.Client, url string) Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Do(t, c, req)
}

// Do sends req with c and reads the whole body.
func Do(t testing.TB, c *http.Client, req *http.Request) Response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return Response{Response: resp, Body: string(b)}
}

// PeerCertificate returns the leaf certificate the server presents for sni.
func (s *Server) PeerCertificate(t testing.TB, sni string) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", s.HTTPSAddr(), TLSConfig(sni))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// LogBuffer collects log output; it is safe for concurrent use.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
