package host

import (
	"net/http"
	"time"
)

// The request path of every request hostd serves, in order. Each stage
// is a small function in the file named beside it: it does its one part
// and calls next to go on, or answers the request itself and returns.
// Deferred work (log lines, counters, the log phase) runs on the way
// back, innermost first.
//
// Both transports of the HTTPS listener enter the same path: HTTP/1.1 on
// hostd's own connection loop (h1.go, tlsserve.go) and HTTP/2 on net/http
// call serveHTTPS with a ResponseWriter and *http.Request of their own;
// the plain HTTP listener (net/http) calls serveHTTP.
func (s *Server) newPipeline() pipeline {
	// The stages that run on the tenant's identity. A CGI script's or a
	// PHP script's local redirect (Location: /path) enters them again.
	onTenant := []stage{
		runHooks, // hooks.go: rewrite, access, content phases; the session; an internal rewrite
		respond,  // respond.go: [[respond]], then PHP, CGI (under the CPU gate) or a static file
	}
	path := func(route stage) func(*exchange) {
		return chain(append([]stage{
			s.logAccess, // accesslog.go: the server's access log line, written when the response is done
			route,       // route.go: Host -> vhost (404), SNI check (421), HSTS; or the 308 to HTTPS
			s.track,     // track.go: drain count, status and metrics counters, the vhost's access log, trace
			s.limit,     // limits.go: max_concurrent_per_client, max_concurrent (503)
			runAsTenant, // tenantrun.go: thread budget, the tenant's identity, panics; then the log phase
		}, onTenant...)...)
	}
	return pipeline{
		https: path(s.routeHTTPS),
		http:  path(s.routeHTTP),
		local: chain(onTenant...),
	}
}

// serveHTTPS serves a request of the TLS listener, from either transport.
func (s *Server) serveHTTPS(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	closeAfterChunked(w, r)
	if r.ProtoMajor == 2 {
		w = newStreamProgress(w, s.cfg.Server.WriteTimeout.Std()) // capacity.go
	}
	s.path.https(newExchange(w, r, start))
}

// serveHTTP serves a request of the plain HTTP listener. ACME's HTTP-01
// challenges are answered before the request path: they belong to no
// vhost and are not logged.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if s.serveACMEChallenge(w, r) { // acme.go
		return
	}
	start := time.Now()
	closeAfterChunked(w, r)
	s.path.http(newExchange(w, r, start))
}

// closeAfterChunked closes an HTTP/1.1 connection after a request whose body
// came chunked. net/http frames a request by Transfer-Encoding and drops a
// Content-Length sent with it (RFC 9112 6.3; a non-chunked or repeated
// Transfer-Encoding is refused with 501 or 400, conflicting Content-Lengths
// with 400) before any handler sees it, so hostd cannot tell that both were
// sent and refuse the request. Closing the connection after such a request
// keeps a front proxy that framed it by Content-Length from having the rest
// of its bytes read as a next request (request smuggling). Chunked uploads
// are rare; the cost is one new connection.
func closeAfterChunked(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 && len(r.TransferEncoding) > 0 {
		w.Header().Set("Connection", "close")
	}
}

// serveLocal serves a local redirect of a CGI or PHP script on the
// stages that run on the tenant's identity (the caller is on it).
func (v *vhost) serveLocal(w http.ResponseWriter, r *http.Request) {
	v.local(&exchange{w: w, r: r, v: v})
}

// pipeline holds the composed request paths; it is built once by New.
type pipeline struct {
	https, http func(*exchange) // the listeners' paths, from logAccess on
	local       func(*exchange) // the tenant's stages, for local redirects
}

// A stage is one step of the request path: it serves its part of x and
// calls next to go on, or answers itself and does not.
type stage func(x *exchange, next func(*exchange))

// chain composes stages in order; the last stage's next does nothing.
func chain(stages ...stage) func(*exchange) {
	next := func(*exchange) {}
	for i := len(stages) - 1; i >= 0; i-- {
		st, n := stages[i], next
		next = func(x *exchange) { st(x, n) }
	}
	return next
}

// exchange is one request on its way through the pipeline: the request,
// the writer the stages answer on, and what the stages found out. It is
// the one allocation the path makes per request for itself. It is used
// by one goroutine at a time (the connection's, then the tenant
// thread's).
type exchange struct {
	rec   recorder            // counts the status and bytes (accesslog.go); wraps the transport's writer
	w     http.ResponseWriter // where the stages write: &rec, or a local redirect's writer
	r     *http.Request       // the request; runHooks may hand a rewritten copy to the stages after it
	start time.Time

	name string       // the vhost name the server's access log shows, "-" until routed
	v    *vhost       // the vhost, set by the route stage
	hr   *hookRequest // the hooks' view of the request, for the log phase; nil without hooks
	hook hookRequest  // what hr points to (one allocation with the exchange)
}

func newExchange(w http.ResponseWriter, r *http.Request, start time.Time) *exchange {
	x := &exchange{r: r, start: start, name: "-"}
	x.rec.ResponseWriter = w
	x.w = &x.rec
	return x
}
