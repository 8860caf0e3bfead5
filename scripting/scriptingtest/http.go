package scriptingtest

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/outbound"
)

// HTTPSetup is the outbound test setup: an HTTPS server on 127.0.0.2
// (allowed by address) with the routes /ok (echoes X-In as X-Echo, two
// X-Multi and two Set-Cookie headers, "hello METHOD"), /echo (201, the
// method, Content-Type and body), /big (5000 bytes), /slow (answers only
// when the test ends, never within a request's timeout, whatever its
// context says) and /to?u=URL (a 302 to URL); a fake Redis on 127.0.0.1
// (a protected store); a DNS server answering api.test (127.0.0.2),
// redis.test (127.0.0.1) and meta.test (169.254.169.254), all three names
// allowed; and a Client with a 4096-byte body cap.
type HTTPSetup struct {
	Client     *outbound.Client
	URL        string        // the server's base URL, https://127.0.0.2:PORT
	Port       string        // the server's port
	RedisPort  string        // the fake Redis's port
	RedisConns *atomic.Int32 // connections the fake Redis accepted
}

// NewHTTPSetup starts an HTTPSetup that lives until the test ends.
func NewHTTPSetup(t testing.TB) *HTTPSetup {
	t.Helper()
	redisAddr, redisConns := FakeRedis(t, "127.0.0.1:0")
	_, redisPort, _ := net.SplitHostPort(redisAddr)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo", r.Header.Get("X-In"))
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.Write([]byte("hello " + r.Method))
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(201)
		w.Write([]byte(r.Method + " " + r.Header.Get("Content-Type") + " " + string(b)))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 5000)) })
	release := make(chan struct{})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(30 * time.Second):
		case <-release:
		}
	})
	mux.HandleFunc("/to", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	})
	srv, pool := TLSServer(t, "127.0.0.2:0", mux)
	t.Cleanup(func() { close(release) }) // before the server's Close, which waits for handlers
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	res := DNSServer(t, map[string]string{"api.test": "127.0.0.2", "redis.test": "127.0.0.1", "meta.test": "169.254.169.254"})
	c, err := outbound.New(outbound.Options{
		Allow:     []string{"127.0.0.2", "api.test", "redis.test", "meta.test"},
		Protected: []netip.Addr{netip.MustParseAddr("127.0.0.1")},
		MaxBody:   4096,
		Resolver:  res,
		RootCAs:   pool,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &HTTPSetup{Client: c, URL: srv.URL, Port: port, RedisPort: redisPort, RedisConns: redisConns}
}

// StartHTTP starts the outbound test setup of Case.HTTP (HTTPSetup) and
// returns its client and the request headers the cases read: X-Base (the
// server's base URL) and X-Redis (the Redis's http URL).
func StartHTTP(t testing.TB) (scripting.HTTPClient, map[string]string) {
	t.Helper()
	h := NewHTTPSetup(t)
	return h.Client, map[string]string{"X-Base": h.URL, "X-Redis": "http://redis.test:" + h.RedisPort + "/"}
}
