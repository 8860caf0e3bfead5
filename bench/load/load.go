package load

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Transport is how requests reach the server.
type Transport string

// The transports of the benchmark matrix.
const (
	// HTTP1 is plain HTTP/1.1 with keep-alive.
	HTTP1 Transport = "h1"
	// HTTPS is HTTP/1.1 over TLS with keep-alive.
	HTTPS Transport = "https"
	// HTTPSNew opens a new TLS connection (full handshake) per request.
	HTTPSNew Transport = "https-new"
	// HTTPSResume opens a new TLS connection per request, resuming the
	// TLS session with a ticket (an abbreviated handshake).
	HTTPSResume Transport = "https-resume"
)

// Transports lists all transports in report order.
var Transports = []Transport{HTTP1, HTTPS, HTTPSNew, HTTPSResume}

// ParseTransport returns the transport named s.
func ParseTransport(s string) (Transport, error) {
	for _, t := range Transports {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown transport %q (want h1, https, https-new or https-resume)", s)
}

// Error classes counted in Result.Errors.
const (
	ErrConnect = "connect" // the TCP connection or TLS handshake failed
	ErrTimeout = "timeout" // no complete response within Target.Timeout
	ErrReset   = "reset"   // the server closed or reset the connection mid-request
	ErrBody    = "body"    // the body could not be read, or its length was not the wanted one
	ErrOther   = "other"   // any other client error
	ErrUnsent  = "unsent"  // open loop: offered but never sent (all connections busy until the end)
	// Unexpected status codes count as "status_NNN".
)

// Target is what a run requests.
type Target struct {
	// URLs are requested round robin by connection: connection i uses
	// URLs[i%len(URLs)]. Their host names are the Host header and the
	// TLS server name (SNI); all connections dial Addr.
	URLs []string
	// Addr is the host:port dialled for every URL (a loopback address).
	Addr      string
	Transport Transport
	// Status is the wanted status code (default 200).
	Status int
	// BodyLen is the wanted body length; negative accepts any.
	BodyLen int
	// Timeout bounds one request, connection included (default 10s).
	Timeout time.Duration
}

// Result is what one run measured. Only requests that completed within
// the measured duration count (whenever they started), as in wrk.
type Result struct {
	// OK counts responses with the wanted status and body.
	OK int64 `json:"ok"`
	// Errors counts failed requests by class (see the Err constants).
	Errors map[string]int64 `json:"errors,omitempty"`
	// Duration is the measured time (warm-up excluded).
	Duration time.Duration `json:"duration_ns"`
	// RPS is OK per second of Duration.
	RPS float64 `json:"rps"`
	// Offered is the open loop's offered rate (0 for a closed loop).
	Offered float64 `json:"offered,omitempty"`
	// Latency percentiles of the OK responses; for the open loop they
	// are measured from the scheduled send time, so queueing counts.
	Latency Latency `json:"latency"`
	// Conns is the number of client connections (workers).
	Conns int `json:"conns"`
	// ErrorSamples holds the first error message of each class.
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
}

// ErrorCount is the total of Errors.
func (r Result) ErrorCount() int64 {
	var n int64
	for _, v := range r.Errors {
		n += v
	}
	return n
}

// Latency summarises a set of latencies.
type Latency struct {
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	Max  time.Duration `json:"max_ns"`
	Mean time.Duration `json:"mean_ns"`
}

// Summarize computes the percentiles of d (nearest rank); it sorts d.
func Summarize(d []time.Duration) Latency {
	if len(d) == 0 {
		return Latency{}
	}
	slices.Sort(d)
	var sum time.Duration
	for _, v := range d {
		sum += v
	}
	return Latency{
		P50:  Percentile(d, 50),
		P90:  Percentile(d, 90),
		P99:  Percentile(d, 99),
		Max:  d[len(d)-1],
		Mean: sum / time.Duration(len(d)),
	}
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of the
// sorted slice d: the smallest value with at least p% of d at or below it.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	// rank = ceil(p/100 * n), computed in integers to avoid float error.
	n := len(d)
	k := int(p * float64(n) * 100)
	rank := k / 10000
	if k%10000 != 0 {
		rank++
	}
	rank = max(1, min(rank, n))
	return d[rank-1]
}

// Classify returns the error class of a failed request.
func Classify(err error) string {
	if err == nil {
		return ""
	}
	var ce classedError
	if errors.As(err, &ce) {
		return ce.class
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()) {
		return ErrTimeout
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return ErrConnect
	}
	var re tls.RecordHeaderError
	if errors.As(err, &re) || errors.Is(err, syscall.ECONNREFUSED) {
		return ErrConnect
	}
	var ae tls.AlertError
	if errors.As(err, &ae) {
		return ErrConnect
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "server closed") {
		return ErrReset
	}
	return ErrOther
}

type classedError struct {
	class string
	err   error
}

func (e classedError) Error() string { return e.class + ": " + e.err.Error() }
func (e classedError) Unwrap() error { return e.err }

// client is one connection's worth of client: a raw HTTP/1.1 exchange on
// one net.Conn (TLS or not), cheaper than net/http's Transport so the
// load generator spends its CPU on the wire, not on bookkeeping.
type client struct {
	t       *Target
	host    string // Host header and TLS server name
	tls     bool
	req     []byte
	conn    net.Conn
	br      *bufio.Reader
	dialer  net.Dialer
	tlsConf *tls.Config
	lastErr string // the last failure's message, for Result.ErrorSamples
}

func newClient(t *Target, i int) (*client, error) {
	u, err := url.Parse(t.URLs[i%len(t.URLs)])
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	c := &client{t: t, host: u.Hostname(), tls: u.Scheme == "https", dialer: net.Dialer{Timeout: t.Timeout}}
	if c.tls != (t.Transport != HTTP1) {
		return nil, fmt.Errorf("load: transport %s cannot request %s", t.Transport, u)
	}
	hostHeader := u.Host
	c.req = []byte("GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + hostHeader + "\r\nUser-Agent: hostd-bench\r\n")
	if t.Transport == HTTPSNew || t.Transport == HTTPSResume {
		c.req = append(c.req, "Connection: close\r\n"...)
	}
	c.req = append(c.req, "\r\n"...)
	if c.tls {
		c.tlsConf = &tls.Config{
			ServerName: c.host,
			// The bench's servers use generated self-signed certificates
			// on loopback; the name is still sent as SNI.
			InsecureSkipVerify: true, //nolint:gosec // loopback benchmark only
			NextProtos:         []string{"http/1.1"},
		}
		if t.Transport == HTTPSResume {
			c.tlsConf.ClientSessionCache = tls.NewLRUClientSessionCache(4)
		}
	}
	return c, nil
}

func (c *client) connect(ctx context.Context, deadline time.Time) error {
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	conn, err := c.dialer.DialContext(dctx, "tcp", c.t.Addr)
	if err != nil {
		return classedError{ErrConnect, err}
	}
	if c.tls {
		tc := tls.Client(conn, c.tlsConf)
		if err := tc.HandshakeContext(dctx); err != nil {
			conn.Close()
			if Classify(err) == ErrTimeout {
				return err
			}
			return classedError{ErrConnect, err}
		}
		conn = tc
	}
	c.conn = conn
	if c.br == nil {
		c.br = bufio.NewReaderSize(conn, 16<<10)
	} else {
		c.br.Reset(conn)
	}
	return nil
}

// do performs one request and returns its error class ("" when OK).
func (c *client) do(ctx context.Context) string {
	class := c.exchange(ctx)
	if class != "" || c.t.Transport == HTTPSNew || c.t.Transport == HTTPSResume {
		c.close()
	}
	return class
}

func (c *client) exchange(ctx context.Context) string {
	deadline := time.Now().Add(c.t.Timeout)
	if c.conn == nil {
		if err := c.connect(ctx, deadline); err != nil {
			c.lastErr = err.Error()
			return Classify(err)
		}
	}
	c.conn.SetDeadline(deadline)
	if _, err := c.conn.Write(c.req); err != nil {
		c.lastErr = "write: " + err.Error()
		return classWrite(err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.lastErr = "read response: " + err.Error()
		return classWrite(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		c.lastErr = "read body: " + err.Error()
		if cl := Classify(err); cl == ErrTimeout {
			return cl
		}
		return ErrBody
	}
	if resp.Close && c.t.Transport != HTTPSNew && c.t.Transport != HTTPSResume {
		c.close() // the server ended keep-alive; reconnect next time
	}
	if resp.StatusCode != c.t.Status {
		c.lastErr = "status " + resp.Status
		return fmt.Sprintf("status_%d", resp.StatusCode)
	}
	if c.t.BodyLen >= 0 && n != int64(c.t.BodyLen) {
		c.lastErr = fmt.Sprintf("body of %d bytes, want %d", n, c.t.BodyLen)
		return ErrBody
	}
	return ""
}

// classWrite classifies an error while sending or reading the head: a
// timeout stays a timeout, anything else means the connection broke.
func classWrite(err error) string {
	if cl := Classify(err); cl == ErrTimeout || cl == ErrConnect {
		return cl
	}
	return ErrReset
}

func (c *client) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

func (t Target) withDefaults() (*Target, error) {
	if len(t.URLs) == 0 {
		return nil, errors.New("load: no URLs")
	}
	if t.Addr == "" {
		return nil, errors.New("load: no address")
	}
	if t.Status == 0 {
		t.Status = http.StatusOK
	}
	if t.Timeout <= 0 {
		t.Timeout = 10 * time.Second
	}
	if t.Transport == "" {
		t.Transport = HTTPS
	}
	return &t, nil
}

// tally collects one worker's outcomes.
type tally struct {
	ok      int64
	errs    map[string]int64
	samples map[string]string
	lat     []time.Duration
}

func (t *tally) add(class string, lat time.Duration, c *client) {
	if class == "" {
		t.ok++
		t.lat = append(t.lat, lat)
		return
	}
	if t.errs == nil {
		t.errs, t.samples = map[string]int64{}, map[string]string{}
	}
	t.errs[class]++
	if _, ok := t.samples[class]; !ok && c.lastErr != "" {
		t.samples[class] = c.lastErr
	}
}

func merge(ts []*tally, d time.Duration, conns int) Result {
	r := Result{Duration: d, Conns: conns}
	var lat []time.Duration
	for _, t := range ts {
		r.OK += t.ok
		lat = append(lat, t.lat...)
		for k, v := range t.errs {
			if r.Errors == nil {
				r.Errors, r.ErrorSamples = map[string]int64{}, map[string]string{}
			}
			r.Errors[k] += v
			if _, ok := r.ErrorSamples[k]; !ok && t.samples[k] != "" {
				r.ErrorSamples[k] = t.samples[k]
			}
		}
	}
	r.Latency = Summarize(lat)
	if d > 0 {
		r.RPS = float64(r.OK) / d.Seconds()
	}
	return r
}

// Closed runs a closed loop: conns connections, each issuing its next
// request as soon as the previous one completes, for warmup (not counted)
// and then duration. It blocks until done or ctx ends.
func Closed(ctx context.Context, target Target, conns int, warmup, duration time.Duration) (Result, error) {
	t, err := target.withDefaults()
	if err != nil {
		return Result{}, err
	}
	conns = max(conns, 1)
	start := time.Now()
	measure := start.Add(warmup)
	end := measure.Add(duration)
	tallies := make([]*tally, conns)
	errc := make(chan error, conns)
	var wg sync.WaitGroup
	for i := range conns {
		tl := &tally{lat: make([]time.Duration, 0, 1024)}
		tallies[i] = tl
		wg.Go(func() {
			c, err := newClient(t, i)
			if err != nil {
				errc <- err
				return
			}
			defer c.close()
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				class := c.do(ctx)
				t1 := time.Now()
				if t1.Before(measure) || t1.After(end) {
					continue // completed in the warm-up, or after the end
				}
				tl.add(class, t1.Sub(t0), c)
			}
		})
	}
	if err := wait(ctx, &wg, errc); err != nil {
		return Result{}, err
	}
	return merge(tallies, duration, conns), nil
}

// wait waits for a run's workers and returns the first error one of them
// sent on errc, else ctx's.
func wait(ctx context.Context, wg *sync.WaitGroup, errc <-chan error) error {
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	return ctx.Err()
}

// Open runs an open loop: requests are offered at rate per second for
// duration, each handed to the first free of conns connections; a
// request's latency runs from its scheduled time, so a saturated server
// shows as growing latency and a falling achieved rate, not as a slower
// offered rate. Requests still waiting for a connection at the end count
// as ErrUnsent.
func Open(ctx context.Context, target Target, conns int, rate float64, warmup, duration time.Duration) (Result, error) {
	t, err := target.withDefaults()
	if err != nil {
		return Result{}, err
	}
	if rate <= 0 {
		return Result{}, errors.New("load: rate must be positive")
	}
	conns = max(conns, 1)
	total := int64(rate * (warmup + duration).Seconds())
	queue := make(chan time.Time, total+1)
	var unsent atomic.Int64
	tallies := make([]*tally, conns)
	errc := make(chan error, conns)
	// The clock starts once every keep-alive connection is established,
	// so their handshakes do not leave a backlog that would complete
	// inside the measured window (and show more achieved than offered).
	var ready sync.WaitGroup
	ready.Add(conns)
	// Set before the first request is queued; the channel orders it
	// before the workers' reads.
	var start, measure, end time.Time
	var wg sync.WaitGroup
	for i := range conns {
		tl := &tally{}
		tallies[i] = tl
		wg.Go(func() {
			c, err := newClient(t, i)
			if err != nil {
				ready.Done()
				errc <- err
				return
			}
			defer c.close()
			if t.Transport == HTTP1 || t.Transport == HTTPS {
				c.connect(ctx, time.Now().Add(t.Timeout)) // a failure shows on the first request
			}
			ready.Done()
			for sched := range queue {
				if ctx.Err() != nil {
					continue
				}
				if !time.Now().Before(end) {
					if !sched.Before(measure) {
						unsent.Add(1)
					}
					continue
				}
				class := c.do(ctx)
				t1 := time.Now()
				if t1.Before(measure) || t1.After(end) {
					continue // completed in the warm-up, or after the end
				}
				tl.add(class, t1.Sub(sched), c)
			}
		})
	}
	ready.Wait()
	start = time.Now()
	measure = start.Add(warmup)
	end = measure.Add(duration)
	// The dispatcher wakes often and sends every request whose scheduled
	// time has passed, so the offered rate holds even when a sleep
	// overshoots.
	interval := time.Duration(float64(time.Second) / rate)
	var sent int64
	for sent < total && ctx.Err() == nil {
		now := time.Now()
		due := min(total, int64(now.Sub(start)/interval)+1)
		for ; sent < due; sent++ {
			queue <- start.Add(time.Duration(sent) * interval)
		}
		next := start.Add(time.Duration(sent) * interval)
		if d := time.Until(next); d > 0 {
			time.Sleep(min(d, 5*time.Millisecond))
		}
	}
	close(queue)
	if err := wait(ctx, &wg, errc); err != nil {
		return Result{}, err
	}
	r := merge(tallies, duration, conns)
	if n := unsent.Load(); n > 0 {
		if r.Errors == nil {
			r.Errors = map[string]int64{}
		}
		r.Errors[ErrUnsent] += n
	}
	r.Offered = rate
	return r, nil
}
