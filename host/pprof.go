package host

import (
	"net/http"
	"net/http/pprof"
)

// profilingRoutes adds Go's profiler to the admin listener (behind its
// token, admin.go): `go tool pprof http://ADMIN/debug/pprof/profile?seconds=10`
// profiles the running server (docs/performance.md).
func profilingRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
}
