package host

import (
	"context"
	"errors"
	"hash/maphash"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostd/hostd/host/admission"
)

// Capacity that a client cannot pin: a write timeout that is reset by
// every write that makes progress, a per-client share of each vhost, and
// a server-wide budget of the OS threads the switching modes hold.

// remoteClient returns the client key of a request.
func remoteClient(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return admission.ClientKey(ap.Addr())
}

// progressListener wraps accepted connections in progressConn.
type progressListener struct {
	net.Listener
	timeout time.Duration
}

func (l progressListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &progressConn{Conn: c, timeout: l.timeout}, nil
}

// withProgressTimeout wraps ln so that a connection whose peer takes no
// bytes for d is closed (d <= 0: ln unchanged).
func withProgressTimeout(ln net.Listener, d time.Duration) net.Listener {
	if d <= 0 {
		return ln
	}
	return progressListener{Listener: ln, timeout: d}
}

// progressConn is server.write_timeout per write progress: before each
// write to the socket (a TLS record, an HTTP/2 frame batch, a chunk of a
// file), the write deadline is moved to now + timeout. A client that
// takes nothing for that long fails the write and loses the connection,
// and with it every stream and tenant thread it held; a slow download
// that keeps moving never times out. The deadline is moved at most every
// timeout/8, so a write may get 7/8 of the timeout at worst.
type progressConn struct {
	net.Conn
	timeout time.Duration
	armed   atomic.Int64 // unix nanoseconds of the deadline set; 0 = none
}

func (c *progressConn) arm() {
	now := time.Now()
	if d := c.armed.Load(); d != 0 && d-now.UnixNano() > int64(c.timeout-c.timeout/8) {
		return
	}
	dl := now.Add(c.timeout)
	c.Conn.SetWriteDeadline(dl)
	c.armed.Store(dl.UnixNano())
}

func (c *progressConn) Write(p []byte) (int, error) {
	c.arm()
	return c.Conn.Write(p)
}

// ReadFrom keeps sendfile(2) for plain connections, in chunks that each
// get the timeout.
func (c *progressConn) ReadFrom(r io.Reader) (int64, error) {
	rf, ok := c.Conn.(io.ReaderFrom)
	if !ok {
		return io.Copy(writerOnly{c}, r)
	}
	var total int64
	for {
		c.arm()
		var n int64
		var err error
		// One level of *io.LimitedReader around an *os.File is what
		// sendfile recognises: keep it one level.
		if lr, ok := r.(*io.LimitedReader); ok {
			if lr.N <= 0 {
				return total, nil
			}
			n, err = rf.ReadFrom(&io.LimitedReader{R: lr.R, N: min(lr.N, 1<<20)})
			lr.N -= n
		} else {
			n, err = rf.ReadFrom(&io.LimitedReader{R: r, N: 1 << 20})
		}
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

// SetWriteDeadline and SetDeadline are used by net/http around the TLS
// handshake; the next write sets the progress deadline again.
func (c *progressConn) SetWriteDeadline(t time.Time) error {
	c.armed.Store(0)
	return c.Conn.SetWriteDeadline(t)
}

func (c *progressConn) SetDeadline(t time.Time) error {
	c.armed.Store(0)
	return c.Conn.SetDeadline(t)
}

// h2MaxStreams is HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS: server
// h2_max_streams, or the largest max_concurrent_per_client of the vhosts,
// at least 100 and at most 250 (250 when a vhost has no per-client
// limit). Streams beyond a client's limit are answered 503 at once, so a
// client gains nothing by opening more. It is not set lower than 100:
// clients send their first burst before they see the server's SETTINGS,
// and with a lower limit Go's client saw streams of such a burst refused
// and its connections reset (TestTenantStress, 200 requests at once).
func (s *Server) h2MaxStreams() int {
	if n := s.cfg.Server.H2MaxStreams; n > 0 {
		return n
	}
	n := 100
	for _, v := range s.cfg.VHosts {
		pc := v.Limits.MaxConcurrentPerClient
		if pc <= 0 {
			return 250
		}
		n = max(n, pc)
	}
	return min(n, 250)
}

// threadBudget bounds the OS threads the switching modes hold for
// requests server-wide (server.max_threads): each request in a thread,
// thread-per-request or inline vhost holds one. Past the budget a
// request waits up to wait for one, then gets 503; Go's own limit
// (debug.SetMaxThreads, which kills the process) is set well above it.
// Its methods are safe for concurrent use.
type threadBudget struct {
	sem      chan struct{} // nil: unlimited
	wait     time.Duration
	inUse    atomic.Int64
	rejected atomic.Uint64
}

// errThreadBudget is returned when no thread could be had in time.
var errThreadBudget = errors.New("server.max_threads reached")

// threadHeadroom is how far above the budget Go's thread limit is set,
// for the threads Go itself needs (one per P, blocking system calls, the
// CGI spawner, the ticket and OCSP workers).
const threadHeadroom = 4096

func newThreadBudget(max int, wait time.Duration) *threadBudget {
	b := &threadBudget{wait: wait}
	if max > 0 {
		b.sem = make(chan struct{}, max)
		if limit := max + threadHeadroom; limit > 10000 { // Go's default
			debug.SetMaxThreads(limit)
		}
	}
	return b
}

func (b *threadBudget) acquire(ctx context.Context) error {
	if b.sem != nil {
		select {
		case b.sem <- struct{}{}:
		default:
			t := time.NewTimer(b.wait)
			defer t.Stop()
			select {
			case b.sem <- struct{}{}:
			case <-t.C:
				b.rejected.Add(1)
				return errThreadBudget
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	b.inUse.Add(1)
	return nil
}

func (b *threadBudget) release() {
	b.inUse.Add(-1)
	if b.sem != nil {
		<-b.sem
	}
}

// limit returns the budget (0: unlimited).
func (b *threadBudget) limit() int { return cap(b.sem) }

// osThreads returns the process's OS threads (/proc/self/status), or -1.
func osThreads() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// clientLimits counts each client's requests in progress per vhost, for
// [limits] max_concurrent_per_client. Entries exist only while a client
// has requests in progress. It is safe for concurrent use.
type clientLimits struct {
	seed   maphash.Seed
	once   sync.Once
	shards [32]clientShard
}

type clientShard struct {
	mu sync.Mutex
	m  map[clientSlot]int
}

type clientSlot struct {
	vhost  string
	client netip.Addr
}

func (cl *clientLimits) shard(k clientSlot) *clientShard {
	cl.once.Do(func() { cl.seed = maphash.MakeSeed() })
	var h maphash.Hash
	h.SetSeed(cl.seed)
	h.WriteString(k.vhost)
	a := k.client.As16() // IPv4 as IPv4-mapped: the same shard per key is all that matters
	h.Write(a[:])
	return &cl.shards[h.Sum64()%uint64(len(cl.shards))]
}

// enter counts a request of k unless k already has max in progress.
func (cl *clientLimits) enter(k clientSlot, max int) bool {
	sh := cl.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m == nil {
		sh.m = make(map[clientSlot]int)
	}
	if sh.m[k] >= max {
		return false
	}
	sh.m[k]++
	return true
}

func (cl *clientLimits) exit(k clientSlot) {
	sh := cl.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[k]--; sh.m[k] <= 0 {
		delete(sh.m, k)
	}
}

// holdsThread reports whether a request of a vhost in mode holds an OS
// thread of its own while it runs.
func holdsThread(mode string) bool {
	return mode == "thread" || mode == "thread-per-request" || mode == "inline"
}

// admitClient counts r against its client's max_concurrent_per_client on
// v. When the client is at its limit it answers 503 and returns false;
// otherwise, when counted, the caller ends the count with
// s.guard.clients.exit(k) (no closure: one allocation less per request).
func (s *Server) admitClient(w http.ResponseWriter, r *http.Request, v *vhost) (k clientSlot, counted, ok bool) {
	pc := v.cfg.Limits.MaxConcurrentPerClient
	if pc <= 0 {
		return clientSlot{}, false, true
	}
	k = clientSlot{vhost: v.cfg.ServerName, client: remoteClient(r)}
	if !s.guard.clients.enter(k, pc) {
		s.guard.perClientRejected.Add(1)
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, "too many requests in progress from your address, please retry shortly")
		return clientSlot{}, false, false
	}
	return k, true, true
}

// streamProgress is write_timeout per write progress for one HTTP/2
// stream: its write deadline (which resets the stream when it passes) is
// moved forward by every write, so a stream whose client never opens its
// flow-control window gives its handler, and the tenant thread it holds,
// back after the timeout, while the connection's other streams go on.
type streamProgress struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	armed   time.Time
}

func newStreamProgress(w http.ResponseWriter, d time.Duration) http.ResponseWriter {
	if d <= 0 {
		return w
	}
	return &streamProgress{ResponseWriter: w, rc: http.NewResponseController(w), timeout: d}
}

func (s *streamProgress) arm() {
	now := time.Now()
	if !s.armed.IsZero() && s.armed.Sub(now) > s.timeout-s.timeout/8 {
		return
	}
	s.armed = now.Add(s.timeout)
	s.rc.SetWriteDeadline(s.armed)
}

func (s *streamProgress) Write(p []byte) (int, error) {
	s.arm()
	return s.ResponseWriter.Write(p)
}

func (s *streamProgress) WriteHeader(code int) {
	s.arm()
	s.ResponseWriter.WriteHeader(code)
}

func (s *streamProgress) Flush() {
	s.arm()
	s.rc.Flush()
}

func (s *streamProgress) Unwrap() http.ResponseWriter { return s.ResponseWriter }
