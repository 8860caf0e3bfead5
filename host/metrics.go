package host

import (
	"crypto/tls"
	"errors"
	"log"
	"log/slog"
	"os"
	"strconv"
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

	codes        statusCounts  // responses by exact status code
	redirects    atomic.Uint64 // plain HTTP requests redirected (308) to HTTPS
	bytes        atomic.Uint64
	hookErrors   atomic.Uint64
	hookTimeouts atomic.Uint64
	cgiSpawns    atomic.Uint64
	// sessionErrors counts requests the session store failed (503).
	sessionErrors atomic.Uint64

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

// statusCounts counts responses by exact status code. Codes 100 to 999
// have a block of 100 counters per hundred, made on the first response of
// that class, so a vhost pays only for the classes it answers (10,000
// idle vhosts cost nothing). Its methods are safe for concurrent use.
type statusCounts struct {
	blocks [10]atomic.Pointer[[100]atomic.Uint64]
	other  atomic.Uint64 // codes outside 100-999
}

func (c *statusCounts) add(code int) {
	if code < 100 || code > 999 {
		c.other.Add(1)
		return
	}
	p := &c.blocks[code/100]
	b := p.Load()
	if b == nil {
		p.CompareAndSwap(nil, new([100]atomic.Uint64))
		b = p.Load()
	}
	b[code%100].Add(1)
}

// each calls fn for each code counted at least once, in order.
func (c *statusCounts) each(fn func(code int, n uint64)) {
	for h := range c.blocks {
		if b := c.blocks[h].Load(); b != nil {
			for i := range b {
				if n := b[i].Load(); n > 0 {
					fn(h*100+i, n)
				}
			}
		}
	}
}

// total returns the responses counted, and those of class (1 to 9).
func (c *statusCounts) total(class int) (all, inClass uint64) {
	all = c.other.Load()
	c.each(func(code int, n uint64) {
		all += n
		if code/100 == class {
			inClass += n
		}
	})
	return all, inClass
}

// codeClass returns the class label of a status code: "2xx", or "other".
func codeClass(code int) string {
	if code < 100 || code > 999 {
		return "other"
	}
	return strconv.Itoa(code/100) + "xx"
}

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
	o.codes.add(status)
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
	redirects, overload, sessionErrors, configStale                             *prometheus.Desc
	latency, handshakes, generation, reloads, reloadsPartial                    *prometheus.Desc
	unknownHost, misdirected, refusedPerIP                                      *prometheus.Desc
	outRequests, outRefused, outErrors, outBytes                                *prometheus.Desc // outbound.go
	// sharedDictBytes is the use of each vhost's shared dictionary.
	sharedDictBytes *prometheus.Desc
}

func newMetricsCollector(s *Server) *metricsCollector {
	v := []string{"vhost"}
	c := &metricsCollector{
		s:              s,
		requests:       prometheus.NewDesc("hostd_requests_total", "Requests served, by vhost and exact status code (code_class: 2xx, 3xx ...).", []string{"vhost", "code", "code_class"}, nil),
		bytes:          prometheus.NewDesc("hostd_response_bytes_total", "Response body bytes sent.", v, nil),
		active:         prometheus.NewDesc("hostd_requests_active", "Requests in progress.", v, nil),
		workers:        prometheus.NewDesc("hostd_workers", "Live worker threads of the vhost's tenant.", v, nil),
		busy:           prometheus.NewDesc("hostd_workers_busy", "Worker threads running a request.", v, nil),
		hookErrors:     prometheus.NewDesc("hostd_hook_errors_total", "Failed hook runs (timeouts included).", v, nil),
		hookTimeouts:   prometheus.NewDesc("hostd_hook_timeouts_total", "Hook runs stopped by their time limit.", v, nil),
		cgiSpawns:      prometheus.NewDesc("hostd_cgi_spawns_total", "CGI scripts started.", v, nil),
		redirects:      prometheus.NewDesc("hostd_https_redirects_total", "Plain HTTP requests redirected (308) to HTTPS.", v, nil),
		overload:       prometheus.NewDesc("hostd_max_concurrent_rejections_total", "Requests answered 503 because the vhost had max_concurrent requests in progress.", v, nil),
		sessionErrors:  prometheus.NewDesc("hostd_session_store_errors_total", "Requests answered 503 or not saved because the session store failed.", v, nil),
		outRequests:    prometheus.NewDesc("hostd_outbound_requests_total", "Outbound HTTP requests of hooks (hostd.http.request).", v, nil),
		outRefused:     prometheus.NewDesc("hostd_outbound_refused_total", "Outbound requests, redirects or connections the vhost's outbound list refused.", v, nil),
		outErrors:      prometheus.NewDesc("hostd_outbound_errors_total", "Outbound requests that failed (network, TLS, timeout, size).", v, nil),
		outBytes:       prometheus.NewDesc("hostd_outbound_response_bytes_total", "Response body bytes outbound requests returned to hooks.", v, nil),
		configStale:    prometheus.NewDesc("hostd_vhost_config_stale", "1 when the vhost serves its previous version because its new files have errors.", v, nil),
		latency:        prometheus.NewDesc("hostd_request_duration_seconds", "Request latency.", v, nil),
		handshakes:     prometheus.NewDesc("hostd_tls_handshakes_total", "TLS handshakes by result: full, resumed, failed, shed.", []string{"result"}, nil),
		generation:     prometheus.NewDesc("hostd_config_generation", "Configuration generation: 1 at start, +1 per reload applied.", nil, nil),
		reloads:        prometheus.NewDesc("hostd_reload_failures_total", "Reloads refused because the main file was invalid.", nil, nil),
		reloadsPartial: prometheus.NewDesc("hostd_reload_partial_total", "Reloads applied without some vhost files, which had errors.", nil, nil),
		unknownHost:    prometheus.NewDesc("hostd_unknown_host_requests_total", "Requests answered 404 because no vhost serves their host name.", []string{"listener"}, nil),
		misdirected:    prometheus.NewDesc("hostd_misdirected_requests_total", "Requests answered 421 because their Host header names another vhost than the TLS server name.", nil, nil),
		refusedPerIP:   prometheus.NewDesc("hostd_connections_refused_per_ip_total", "Connections closed at accept because their client IP had max_conns_per_ip open.", nil, nil),
	}
	c.sharedDictBytes = prometheus.NewDesc("hostd_shared_dict_bytes", "Bytes (keys and values) the vhost's shared dictionary counts against shared_dict_size.", v, nil)
	return c
}

func (c *metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.requests, c.bytes, c.active, c.workers, c.busy, c.hookErrors,
		c.hookTimeouts, c.cgiSpawns, c.redirects, c.overload, c.sessionErrors, c.configStale, c.latency,
		c.handshakes, c.generation, c.reloads, c.reloadsPartial, c.unknownHost, c.misdirected, c.refusedPerIP,
		c.outRequests, c.outRefused, c.outErrors, c.outBytes, c.sharedDictBytes} {
		ch <- d
	}
}

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
		o.codes.each(func(code int, n uint64) {
			counter(c.requests, n, name, strconv.Itoa(code), codeClass(code))
		})
		if n := o.codes.other.Load(); n > 0 {
			counter(c.requests, n, name, "other", "other")
		}
		counter(c.bytes, o.bytes.Load(), name)
		gauge(c.active, float64(o.active.Load()), name)
		st := v.sb.Stats()
		gauge(c.workers, float64(st.Workers), name)
		gauge(c.busy, float64(st.Busy), name)
		counter(c.hookErrors, o.hookErrors.Load(), name)
		counter(c.hookTimeouts, o.hookTimeouts.Load(), name)
		counter(c.cgiSpawns, o.cgiSpawns.Load(), name)
		counter(c.redirects, o.redirects.Load(), name)
		counter(c.overload, v.limit.rejected.Load(), name)
		counter(c.sessionErrors, o.sessionErrors.Load(), name)
		if v.out != nil {
			counter(c.outRequests, v.out.Stats.Requests.Load(), name)
			counter(c.outRefused, v.out.Stats.Refused.Load(), name)
			counter(c.outErrors, v.out.Stats.Errors.Load(), name)
			counter(c.outBytes, v.out.Stats.BytesRecv.Load(), name)
		}
		stale := 0.0
		if rt.problems[v.cfg.File] != nil {
			stale = 1
		}
		gauge(c.configStale, stale, name)
		if v.shared != nil {
			_, b, _ := v.shared.Usage()
			gauge(c.sharedDictBytes, float64(b), name)
		}
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
	counter(c.reloadsPartial, c.s.ops.reloadPartial.Load())
	counter(c.unknownHost, c.s.stats.unknownHostHTTPS.Load(), "https")
	counter(c.unknownHost, c.s.stats.unknownHostHTTP.Load(), "http")
	counter(c.misdirected, c.s.stats.misdirected.Load())
	counter(c.refusedPerIP, c.s.stats.admission.RefusedPerIP.Load())
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
