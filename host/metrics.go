package host

import (
	"crypto/tls"
	"errors"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hostd/hostd/scripting"
)

// latencyBuckets are the upper bounds (seconds) of the request latency
// histogram, the same for every vhost.
var latencyBuckets = [...]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// vhostOps are one vhost's operational counters and its drain state. The
// request path only does atomic adds here; status, metrics and the HTML
// page read snapshots. Its fields are safe for concurrent use.
type vhostOps struct {
	// active counts requests inside the vhost; retired is set by a reload
	// that dropped or replaced the vhost. A request increments active and
	// then checks retired; a reload sets retired and then waits for active
	// to reach 0, so no request runs on a closed vhost (see enter).
	active  atomic.Int64
	retired atomic.Bool

	byClass      [6]atomic.Uint64 // [0] other, [1] 1xx ... [5] 5xx
	bytes        atomic.Uint64
	hookErrors   atomic.Uint64
	hookTimeouts atomic.Uint64
	cgiSpawns    atomic.Uint64

	latency    [len(latencyBuckets) + 1]atomic.Uint64 // last: +Inf
	latencySum atomic.Uint64                          // nanoseconds
}

// enter registers a request; false means the vhost was retired and the
// request must be routed again with the current routes.
func (o *vhostOps) enter() bool {
	o.active.Add(1)
	if o.retired.Load() {
		o.active.Add(-1)
		return false
	}
	return true
}

func (o *vhostOps) exit() { o.active.Add(-1) }

// hookFailed counts a failed hook run.
func (o *vhostOps) hookFailed(err error) {
	o.hookErrors.Add(1)
	if errors.Is(err, scripting.ErrTimeout) {
		o.hookTimeouts.Add(1)
	}
}

// record counts a finished request. The latency histogram and byte counter
// are kept only when metrics are on.
func (o *vhostOps) record(status int, bytes int64, d time.Duration, metrics bool) {
	c := status / 100
	if c < 1 || c > 5 {
		c = 0
	}
	o.byClass[c].Add(1)
	if !metrics {
		return
	}
	o.bytes.Add(uint64(bytes))
	sec := d.Seconds()
	i := 0
	for i < len(latencyBuckets) && sec > latencyBuckets[i] {
		i++
	}
	o.latency[i].Add(1)
	o.latencySum.Add(uint64(d))
}

// serveTracked serves r on v (through serveVHost's limits) and counts it
// for status, metrics and trace. When a reload retired v between the lookup
// and now, the request is routed again with the current routes.
func (s *Server) serveTracked(rec *recorder, r *http.Request, v *vhost, start time.Time) {
	for !v.ops.enter() {
		if v = s.routes.Load().lookup(canonicalHost(r.Host)); v == nil {
			httpError(rec, http.StatusNotFound, "no site is configured for this host name")
			return
		}
	}
	tracing := s.ops.trace.active()
	if tracing {
		rec.wantTID = true
	}
	// Deferred, so that an aborted response (a re-raised
	// http.ErrAbortHandler) leaves the vhost and is counted and logged.
	defer func() {
		v.ops.exit()
		d := time.Since(start)
		v.ops.record(rec.statusCode(), rec.bytes, d, s.ops.metricsOn)
		if v.acc != nil {
			v.acc.log(r, v.cfg.ServerName, rec, start)
		}
		if tracing {
			s.ops.trace.publish(v, rec, r, start, d)
		}
	}()
	s.serveVHost(rec, r, v)
}

// countHandshake is the TLS config's VerifyConnection: it runs once per
// handshake, full or resumed, and never refuses one.
func (s *Server) countHandshake(cs tls.ConnectionState) error {
	if cs.DidResume {
		s.stats.handshakesResumed.Add(1)
	} else {
		s.stats.handshakesFull.Add(1)
	}
	return nil
}

// handshakeErrorLog returns the http.Server error log: it forwards to the
// server's logger and counts the failed TLS handshakes net/http reports.
func (s *Server) handshakeErrorLog() *log.Logger {
	inner := slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug)
	return log.New(handshakeCounter{s: s, out: inner}, "", 0)
}

type handshakeCounter struct {
	s   *Server
	out *log.Logger
}

func (h handshakeCounter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "TLS handshake error") {
		h.s.stats.handshakesFailed.Add(1)
	}
	h.out.Print(string(p))
	return len(p), nil
}

// metricsCollector exports the server's counters to Prometheus. It reads
// the current routes at scrape time, so vhosts removed by a reload vanish
// and added ones appear without registering anything per request.
type metricsCollector struct {
	s *Server

	requests, bytes, active, workers, busy, hookErrors, hookTimeouts, cgiSpawns *prometheus.Desc
	latency, handshakes, generation, reloads                                    *prometheus.Desc
}

func newMetricsCollector(s *Server) *metricsCollector {
	v := []string{"vhost"}
	return &metricsCollector{
		s:            s,
		requests:     prometheus.NewDesc("hostd_requests_total", "Requests served, by vhost and status class.", []string{"vhost", "code"}, nil),
		bytes:        prometheus.NewDesc("hostd_response_bytes_total", "Response body bytes sent.", v, nil),
		active:       prometheus.NewDesc("hostd_requests_active", "Requests in progress.", v, nil),
		workers:      prometheus.NewDesc("hostd_workers", "Live worker threads of the vhost's tenant.", v, nil),
		busy:         prometheus.NewDesc("hostd_workers_busy", "Worker threads running a request.", v, nil),
		hookErrors:   prometheus.NewDesc("hostd_hook_errors_total", "Failed hook runs (timeouts included).", v, nil),
		hookTimeouts: prometheus.NewDesc("hostd_hook_timeouts_total", "Hook runs stopped by their time limit.", v, nil),
		cgiSpawns:    prometheus.NewDesc("hostd_cgi_spawns_total", "CGI scripts started.", v, nil),
		latency:      prometheus.NewDesc("hostd_request_duration_seconds", "Request latency.", v, nil),
		handshakes:   prometheus.NewDesc("hostd_tls_handshakes_total", "TLS handshakes by result: full, resumed, failed, shed.", []string{"result"}, nil),
		generation:   prometheus.NewDesc("hostd_config_generation", "Configuration generation: 1 at start, +1 per successful reload.", nil, nil),
		reloads:      prometheus.NewDesc("hostd_reload_failures_total", "Reloads refused because the new configuration was invalid.", nil, nil),
	}
}

func (c *metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.requests, c.bytes, c.active, c.workers, c.busy, c.hookErrors,
		c.hookTimeouts, c.cgiSpawns, c.latency, c.handshakes, c.generation, c.reloads} {
		ch <- d
	}
}

var classLabels = [6]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx"}

func (c *metricsCollector) Collect(ch chan<- prometheus.Metric) {
	rt := c.s.routes.Load()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, v := range rt.all {
		name := v.cfg.ServerName
		o := &v.ops
		for i := range o.byClass {
			counter(c.requests, o.byClass[i].Load(), name, classLabels[i])
		}
		counter(c.bytes, o.bytes.Load(), name)
		gauge(c.active, float64(o.active.Load()), name)
		st := v.sb.Stats()
		gauge(c.workers, float64(st.Workers), name)
		gauge(c.busy, float64(st.Busy), name)
		counter(c.hookErrors, o.hookErrors.Load(), name)
		counter(c.hookTimeouts, o.hookTimeouts.Load(), name)
		counter(c.cgiSpawns, o.cgiSpawns.Load(), name)
		buckets := make(map[float64]uint64, len(latencyBuckets))
		var cum uint64
		for i, ub := range latencyBuckets {
			cum += o.latency[i].Load()
			buckets[ub] = cum
		}
		cum += o.latency[len(latencyBuckets)].Load()
		ch <- prometheus.MustNewConstHistogram(c.latency, cum, time.Duration(o.latencySum.Load()).Seconds(), buckets, name)
	}
	hs := c.s.HandshakeStats()
	counter(c.handshakes, hs.Full, "full")
	counter(c.handshakes, hs.Resumed, "resumed")
	counter(c.handshakes, hs.Failed, "failed")
	counter(c.handshakes, hs.Shed, "shed")
	gauge(c.generation, float64(rt.gen))
	counter(c.reloads, c.s.ops.reloadFailures.Load())
}

// processThreads returns the number of OS threads of this process, or -1.
func processThreads() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Threads:"); ok {
			n := 0
			for _, c := range strings.TrimSpace(rest) {
				if c < '0' || c > '9' {
					return -1
				}
				n = n*10 + int(c-'0')
			}
			return n
		}
	}
	return -1
}
