package host

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// vhostLimits counts each vhost's requests in progress against its
// [limits] max_concurrent, so that one tenant's flood takes at most its
// share of the server. Counters are kept by server name, so they survive
// a reload that rebuilds the vhosts. It is safe for concurrent use.
type vhostLimits struct {
	byName sync.Map // server name -> *vhostCounter
}

type vhostCounter struct {
	inFlight atomic.Int64
	rejected atomic.Uint64
	lastLog  atomic.Int64 // unix nanoseconds of the last log line
}

func (l *vhostLimits) counter(name string) *vhostCounter {
	if c, ok := l.byName.Load(name); ok {
		return c.(*vhostCounter)
	}
	c, _ := l.byName.LoadOrStore(name, new(vhostCounter))
	return c.(*vhostCounter)
}

// limit is the stage that admits a request to its vhost: it answers 503
// with Retry-After when the client already has max_concurrent_per_client
// requests in progress there, or the vhost max_concurrent, and logs the
// latter (at most one line a second per vhost).
func (s *Server) limit(x *exchange, next func(*exchange)) {
	w, v := x.w, x.v
	if k, counted, ok := s.admitClient(w, x.r, v); !ok { // capacity.go
		return
	} else if counted {
		defer s.guard.clients.exit(k)
	}
	max := int64(v.cfg.Limits.MaxConcurrent)
	if max <= 0 { // -1, or a Config not made by tenant.Load
		next(x)
		return
	}
	c := v.limit
	if c.inFlight.Add(1) > max {
		c.inFlight.Add(-1)
		c.rejected.Add(1)
		now := time.Now().UnixNano()
		if last := c.lastLog.Load(); now-last >= int64(time.Second) && c.lastLog.CompareAndSwap(last, now) {
			v.logger.Warn("overload: max_concurrent reached, answering 503", "max_concurrent", max,
				"rejected_total", c.rejected.Load())
		}
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, "this site is busy, please retry shortly")
		return
	}
	defer c.inFlight.Add(-1)
	next(x)
}
