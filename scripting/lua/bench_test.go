package lua

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

// The hello benchmarks compare examples/hooks/lua/hello.lua with a native
// Go handler that writes the same bytes: in-process on the fake request,
// and over HTTP keep-alive on a loopback httptest server.

var helloBody = []byte("Hello, world!\n")

func nativeHello(req scripting.Request) {
	req.HeadersOut().Set("Content-Type", "text/plain")
	req.Write(helloBody)
}

func BenchmarkHelloLua(b *testing.B) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	scriptingtest.BenchmarkRun(b, e, example(b, "hello.lua"), string(helloBody))
}

func BenchmarkHelloNative(b *testing.B) {
	req := scriptingtest.NewRequest(scriptingtest.RequestOptions{})
	b.ReportAllocs()
	for b.Loop() {
		req.Reset()
		nativeHello(req)
	}
}

// httpReq is a minimal scripting.Request over net/http for the benchmark;
// host has the real one.
type httpReq struct {
	w      http.ResponseWriter
	r      *http.Request
	status int
	wrote  bool
	vars   map[string]any
	log    *slog.Logger
}

func (h *httpReq) Method() string { return h.r.Method }
func (h *httpReq) URI() string    { return h.r.RequestURI }
func (h *httpReq) Path() string   { return h.r.URL.Path }
func (h *httpReq) SetPath(p, q string, hasQ bool) error {
	h.r.URL.Path = p
	if hasQ {
		h.r.URL.RawQuery = q
	}
	return nil
}
func (h *httpReq) Query() string           { return h.r.URL.RawQuery }
func (h *httpReq) Host() string            { return h.r.Host }
func (h *httpReq) Scheme() string          { return "http" }
func (h *httpReq) RemoteAddr() string      { ip, _, _ := net.SplitHostPort(h.r.RemoteAddr); return ip }
func (h *httpReq) RemotePort() int         { return 0 }
func (h *httpReq) HeadersIn() http.Header  { return h.r.Header }
func (h *httpReq) HeadersOut() http.Header { return h.w.Header() }
func (h *httpReq) Body() ([]byte, error)   { return io.ReadAll(h.r.Body) }
func (h *httpReq) Status() int             { return h.status }
func (h *httpReq) SetStatus(code int)      { h.status = code }
func (h *httpReq) Logger() *slog.Logger    { return h.log }
func (h *httpReq) Session() (scripting.Session, error) {
	return nil, scripting.ErrNoSession
}
func (h *httpReq) Vars() map[string]any {
	if h.vars == nil {
		h.vars = map[string]any{}
	}
	return h.vars
}

func (h *httpReq) Write(p []byte) (int, error) {
	if !h.wrote {
		h.wrote = true
		if h.status == 0 {
			h.status = http.StatusOK
		}
		h.w.WriteHeader(h.status)
	}
	return h.w.Write(p)
}

func luaHandler(e *Engine, path string) http.Handler {
	log := slog.New(slog.DiscardHandler)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := &httpReq{w: w, r: r, log: log}
		if _, err := e.Run(r.Context(), scripting.PhaseContent, path, req); err != nil {
			http.Error(w, "hook failed", http.StatusInternalServerError)
		}
	})
}

func nativeHandler() http.Handler {
	log := slog.New(slog.DiscardHandler)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nativeHello(&httpReq{w: w, r: r, log: log})
	})
}

// benchHTTP drives h over keep-alive connections, sequentially and, with
// parallel, from GOMAXPROCS goroutines, and reports requests per second.
func benchHTTP(b *testing.B, h http.Handler, parallel bool) {
	srv := httptest.NewServer(h)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func() error {
		resp, err := client.Get(srv.URL + "/")
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if string(body) != string(helloBody) || resp.Header.Get("Content-Type") != "text/plain" {
			b.Errorf("response %q %q", body, resp.Header.Get("Content-Type"))
		}
		return nil
	}
	b.ReportAllocs()
	start := time.Now()
	if parallel {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := get(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	} else {
		for b.Loop() {
			if err := get(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

func BenchmarkHelloLuaHTTP(b *testing.B) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	benchHTTP(b, luaHandler(e, example(b, "hello.lua")), false)
}

func BenchmarkHelloNativeHTTP(b *testing.B) {
	benchHTTP(b, nativeHandler(), false)
}

func BenchmarkHelloLuaHTTPParallel(b *testing.B) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	benchHTTP(b, luaHandler(e, example(b, "hello.lua")), true)
}

func BenchmarkHelloNativeHTTPParallel(b *testing.B) {
	benchHTTP(b, nativeHandler(), true)
}

// BenchmarkHelloHTTPRatio alternates requests to a Lua and a native
// keep-alive server so that both see the same machine load, and reports
// each one's requests per second and lua/native, the fraction of the
// native rate the Lua hook reaches.
func BenchmarkHelloHTTPRatio(b *testing.B) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	luaSrv := httptest.NewServer(luaHandler(e, example(b, "hello.lua")))
	defer luaSrv.Close()
	natSrv := httptest.NewServer(nativeHandler())
	defer natSrv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func(url string) time.Duration {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(body) != string(helloBody) {
			b.Fatalf("body %q, %v", body, err)
		}
		return time.Since(start)
	}
	var luaT, natT time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if n%2 == 0 {
			luaT += get(luaSrv.URL + "/")
			natT += get(natSrv.URL + "/")
		} else {
			natT += get(natSrv.URL + "/")
			luaT += get(luaSrv.URL + "/")
		}
		n++
	}
	b.ReportMetric(float64(n)/luaT.Seconds(), "lua-req/s")
	b.ReportMetric(float64(n)/natT.Seconds(), "native-req/s")
	b.ReportMetric(natT.Seconds()/luaT.Seconds(), "lua/native")
}

// TestHelloMatchesNative checks over HTTP that the Lua hello hook and the
// native handler send the same status, Content-Type and body.
func TestHelloMatchesNative(t *testing.T) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	get := func(h http.Handler) (int, string, string) {
		srv := httptest.NewServer(h)
		defer srv.Close()
		resp, err := srv.Client().Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
	}
	ls, lct, lb := get(luaHandler(e, example(t, "hello.lua")))
	ns, nct, nb := get(nativeHandler())
	if ls != ns || lct != nct || lb != nb || lb != "Hello, world!\n" {
		t.Fatalf("lua %d %q %q, native %d %q %q", ls, lct, lb, ns, nct, nb)
	}
}
