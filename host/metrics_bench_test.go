package host

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/tenant"
)

// BenchmarkOpsOverhead serves a 1 KiB static file through the HTTPS
// handler (no network, no TLS) with metrics off, metrics on, and a trace
// subscriber attached, to isolate what status, metrics and tracing add to
// a request.
func BenchmarkOpsOverhead(b *testing.B) {
	dir := b.TempDir()
	for name, body := range map[string]string{
		"hostd.toml":          "[server]\nlisten_https = \"127.0.0.1:0\"\nvhosts = \"vhosts.d/*.toml\"\naccess_log = \"\"\n",
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\n",
		"alice/index.html":    strings.Repeat("a", 1024),
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cfg, err := tenant.Load(filepath.Join(dir, "hostd.toml"))
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		metrics, trace bool
	}{{"metrics-off", false, false}, {"metrics-on", true, false}, {"trace-attached", false, true}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := New(cfg, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.ops.metricsOn = tc.metrics
			if tc.trace {
				sub := s.ops.trace.subscribe("")
				defer s.ops.trace.unsubscribe(sub)
				done := make(chan struct{})
				defer close(done)
				go func() {
					for {
						select {
						case <-sub.lines:
						case <-done:
							return
						}
					}
				}()
			}
			req := httptest.NewRequest(http.MethodGet, "https://alice.example/index.html", nil)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				s.serveHTTPS(w, req)
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

// BenchmarkOpsPerRequest measures only what the track stage adds to a
// request: the counters (metrics off and on) and, with a subscriber, the
// trace line and its hand-off.
func BenchmarkOpsPerRequest(b *testing.B) {
	v := &vhost{cfg: &tenant.VHost{ServerName: "alice.example", Mode: "none"}}
	req := httptest.NewRequest(http.MethodGet, "https://alice.example/index.html", nil)
	rec := &recorder{status: 200, bytes: 1024}
	b.Run("counters-metrics-off", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v.ops.enter()
			v.ops.exit()
			v.ops.record(200, 1024, 150e3, false)
		}
	})
	b.Run("counters-metrics-on", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v.ops.enter()
			v.ops.exit()
			v.ops.record(200, 1024, 150e3, true)
		}
	})
	b.Run("trace-no-subscriber", func(b *testing.B) {
		var t tracer
		b.ReportAllocs()
		for b.Loop() {
			if t.active() {
				b.Fatal("active")
			}
		}
	})
	b.Run("trace-subscriber", func(b *testing.B) {
		var t tracer
		sub := t.subscribe("")
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case <-sub.lines:
				case <-done:
					return
				}
			}
		}()
		start := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			if t.active() {
				t.publish(v, rec, req, start, 150e3)
			}
		}
	})
}
