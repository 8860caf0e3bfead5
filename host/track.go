package host

import (
	"net/http"
	"time"
)

// track is the stage that counts a routed request for status, metrics
// and trace, and writes the vhost's own access log line. When a reload
// retired the vhost between the lookup and now, the request is routed
// again with the current routes.
func (s *Server) track(x *exchange, next func(*exchange)) {
	r, v := x.r, x.v
	for !v.ops.enter() {
		if v = s.routes.Load().lookup(canonicalHost(r.Host)); v == nil {
			httpError(x.w, http.StatusNotFound, "no site is configured for this host name")
			return
		}
	}
	x.v = v
	tracing := s.ops.trace.active()
	if tracing {
		x.rec.wantTID = true
	}
	// Deferred, so that an aborted response (a re-raised
	// http.ErrAbortHandler) leaves the vhost and is counted and logged.
	defer func() {
		v.ops.exit()
		d := time.Since(x.start)
		v.ops.record(x.rec.statusCode(), x.rec.bytes, d, s.ops.metricsOn)
		if v.acc != nil {
			v.acc.log(r, v.cfg.ServerName, &x.rec, x.start)
		}
		if tracing {
			s.ops.trace.publish(v, &x.rec, r, x.start, d)
		}
	}()
	next(x)
}
