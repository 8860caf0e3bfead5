package scriptingtest

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/outbound"
)

// StartHTTP starts the outbound test setup of Case.HTTP: an HTTPS server
// on 127.0.0.2 (allowed by address), a fake Redis on 127.0.0.1 (a
// protected store), and a DNS server answering api.test (127.0.0.2),
// redis.test (127.0.0.1) and meta.test (169.254.169.254), all three
// names allowed. It returns the client and the request headers the
// cases read: X-Base (the server's base URL) and X-Redis (the Redis's
// http URL).
func StartHTTP(t testing.TB) (scripting.HTTPClient, map[string]string) {
	t.Helper()
	redisAddr, _ := FakeRedis(t, "127.0.0.1:0")
	_, redisPort, _ := net.SplitHostPort(redisAddr)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo", r.Header.Get("X-In"))
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		w.Write([]byte("hello " + r.Method))
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(201)
		w.Write([]byte(r.Method + " " + r.Header.Get("Content-Type") + " " + string(b)))
	})
	// /slow answers only when the test ends (never within a case's
	// timeout), whatever its request context says.
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
	return c, map[string]string{"X-Base": srv.URL, "X-Redis": "http://redis.test:" + redisPort + "/"}
}
