package host

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// hostd's HTTP/1.1 keep-alive path over TLS. net/http's server costs a
// goroutine, a blocked read and two deadline changes per request to watch
// for a client going away (its background read), a context and a response
// with its own buffers; this loop reads the next request with the
// connection's one buffered reader, runs the same handler as HTTP/2
// (serveHTTPS) and writes the response with the connection's one buffered
// writer, flushing only when no pipelined request is waiting. The
// parsing is at least as strict as net/http's (h1parse.go), the response
// framing the same (h1writer.go).
//
// What differs from net/http: a request's context is the connection's,
// cancelled when the connection ends or the server shuts down, not when
// the client goes away mid-request (the next write to it fails then, and
// the vhost's script and CGI timeouts bound the work); Hijack is not
// offered (nothing in hostd uses it); trailers in responses are not sent.

// h1 connection states, for graceful shutdown.
const (
	h1Idle   int32 = iota // waiting for the next request; shutdown closes it
	h1Active              // reading or serving a request
	h1Closed              // claimed by shutdown
)

// h1Conns tracks the HTTP/1.x connections for Shutdown and Close. It is
// safe for concurrent use.
type h1Conns struct {
	mu      sync.Mutex
	conns   map[*h1Conn]struct{}
	closing atomic.Bool
	bufs    sync.Pool // *h1Buffers of ended connections
}

// getBuffers returns a reader and writer pair for a new connection.
func (t *h1Conns) getBuffers() *h1Buffers {
	if b, ok := t.bufs.Get().(*h1Buffers); ok {
		return b
	}
	return &h1Buffers{br: bufio.NewReaderSize(nil, h1BufSize), bw: bufio.NewWriterSize(nil, h1BufSize)}
}

func (t *h1Conns) add(c *h1Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing.Load() {
		return false
	}
	if t.conns == nil {
		t.conns = make(map[*h1Conn]struct{})
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *h1Conns) remove(c *h1Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
}

// closeIdle closes the idle connections and reports whether none is left.
func (t *h1Conns) closeIdle() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.conns {
		if c.state.CompareAndSwap(h1Idle, h1Closed) {
			c.tc.Close()
		}
	}
	return len(t.conns) == 0
}

// shutdown stops new connections, closes idle ones, and waits until the
// active ones finished their request or ctx is done.
func (t *h1Conns) shutdown(ctx context.Context) error {
	t.closing.Store(true)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !t.closeIdle() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// closeAll cuts every connection.
func (t *h1Conns) closeAll() {
	t.closing.Store(true)
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.conns {
		c.state.Store(h1Closed)
		c.tc.Close()
	}
}

// h1Conn is one HTTP/1.x connection; its loop runs on one goroutine.
type h1Conn struct {
	s      *Server
	tc     *tls.Conn
	tls    *tls.ConnectionState
	remote string
	br     *bufio.Reader
	bw     *bufio.Writer
	state  atomic.Int32

	base    *http.Request // a request with the connection's context (net/http's values, cancelled at the end), copied for each request
	hdr     []byte        // the request head being read (reused)
	wbuf    []byte        // a response body before its header is committed (reused)
	keys    []string      // header keys being sorted (reused)
	clBuf   [20]byte
	date    []byte // the Date value of dateSec (reused)
	dateSec int64
	copyBuf []byte // ReadFrom's buffer, made on first use
}

// h1BufSize is the size of the connection's reader and writer buffers:
// a TLS record's worth, so a small response is one record, one write.
const h1BufSize = 16 << 10

type h1Buffers struct {
	br *bufio.Reader
	bw *bufio.Writer
}

// serveH1 serves the HTTP/1.x requests of a TLS connection whose handshake
// is done, until the client or the server ends it.
func (s *Server) serveH1(tc *tls.Conn) {
	cs := tc.ConnectionState()
	c := &h1Conn{s: s, tc: tc, tls: &cs, remote: tc.RemoteAddr().String()}
	c.state.Store(h1Active)
	if !s.h1.add(c) {
		tc.Close()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = context.WithValue(ctx, http.ServerContextKey, s.httpsSrv)
	ctx = context.WithValue(ctx, http.LocalAddrContextKey, tc.LocalAddr())
	c.base = (&http.Request{}).WithContext(ctx)
	c.wbuf = make([]byte, 0, h1Buffered)
	bufs := s.h1.getBuffers()
	bufs.br.Reset(tc)
	bufs.bw.Reset(tc)
	c.br, c.bw = bufs.br, bufs.bw
	defer func() {
		cancel()
		tc.Close()
		s.h1.remove(c)
		bufs.br.Reset(nil)
		bufs.bw.Reset(nil)
		s.h1.bufs.Put(bufs)
	}()
	c.serve()
}

func (c *h1Conn) serve() {
	sc := &c.s.cfg.Server
	idle := sc.IdleTimeout.Std()
	for n := 0; ; n++ {
		if c.br.Buffered() == 0 {
			// Before a request: the idle timeout (the header timeout for the
			// first), and shutdown may close the connection.
			if !c.state.CompareAndSwap(h1Active, h1Idle) {
				return
			}
			if d := sc.ReadHeaderTimeout.Std(); n == 0 && d > 0 {
				c.tc.SetReadDeadline(time.Now().Add(d))
			} else if n > 0 && idle > 0 {
				c.tc.SetReadDeadline(time.Now().Add(idle))
			}
			if _, err := c.br.Peek(1); err != nil {
				return
			}
			if !c.state.CompareAndSwap(h1Idle, h1Active) {
				return // shutdown claimed it
			}
		}
		// The read deadlines of a request bound reading its head and body.
		// When the whole head is buffered already (it came in one TLS
		// record, as usual) and there is no body, nothing is read until
		// the next request, whose wait sets its own deadline (idle_timeout;
		// without one the old way): two deadline changes (timer updates)
		// per request fewer.
		headIn := idle > 0 && c.headBuffered()
		var t0 time.Time
		if !headIn {
			t0 = time.Now()
			if d := sc.ReadHeaderTimeout.Std(); d > 0 {
				c.tc.SetReadDeadline(t0.Add(d))
			} else if d := sc.ReadTimeout.Std(); d > 0 {
				c.tc.SetReadDeadline(t0.Add(d))
			}
		}
		req, err := c.readRequest()
		if err != nil {
			c.badRequest(err)
			return
		}
		if !headIn || req.Body != http.NoBody {
			if t0.IsZero() {
				t0 = time.Now()
			}
			if d := sc.ReadTimeout.Std(); d > 0 {
				c.tc.SetReadDeadline(t0.Add(d))
			} else if sc.ReadHeaderTimeout > 0 {
				c.tc.SetReadDeadline(time.Time{})
			}
		}
		w := newH1Writer(c, req)
		if !c.serveRequest(w, req) {
			return
		}
		if w.closeAfter || c.s.h1.closing.Load() {
			c.bw.Flush()
			return
		}
		if c.br.Buffered() == 0 {
			if c.bw.Flush() != nil {
				return
			}
			// Let the other runnable connections go first, as an event loop
			// serves every ready connection before it polls again: by the
			// time this one reads, its client has often sent the next
			// request, and the read succeeds instead of failing with EAGAIN
			// (a system call, then a park and a poller wake-up).
			runtime.Gosched()
		}
	}
}

// headBuffered reports whether the reader holds a whole request head (up
// to its empty line), so that readRequest reads nothing from the
// connection.
func (c *h1Conn) headBuffered() bool {
	b, _ := c.br.Peek(c.br.Buffered()) // no read: at most what is buffered
	return bytes.Contains(b, []byte("\n\r\n")) || bytes.Contains(b, []byte("\n\n"))
}

// serveRequest runs the handler and finishes the response; false: the
// connection must end (a handler aborted, or writing failed).
func (c *h1Conn) serveRequest(w *h1Writer, req *http.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				c.s.logger.Error("panic serving a request", "remote", c.remote, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
			// What was committed goes out, then the connection is cut:
			// a chunked body without its last chunk, a short
			// Content-Length body: the client sees a broken response.
			c.bw.Flush()
			ok = false
		}
	}()
	c.s.serveHTTPS(w, req)
	return w.finish() == nil
}

// badRequest answers a request that could not be read, as net/http does,
// unless the connection merely ended or timed out before a request.
func (c *h1Conn) badRequest(err error) {
	var he *h1Error
	if !errors.As(err, &he) {
		return // EOF, timeout, reset: nothing to answer
	}
	body := strconv.Itoa(he.code) + " " + http.StatusText(he.code)
	if he.public != "" {
		body += ": " + he.public
	}
	fmt.Fprintf(c.bw, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n%s", he.code, http.StatusText(he.code), body)
	c.bw.Flush()
	c.s.logger.Debug("bad HTTP/1.1 request", "remote", c.remote, "code", he.code, "err", he.public)
}

// h1Error is a request refused before the handler: its status and a
// client-safe reason.
type h1Error struct {
	code   int
	public string
}

func (e *h1Error) Error() string { return fmt.Sprintf("%d %s", e.code, e.public) }

func badReq(public string) error { return &h1Error{code: http.StatusBadRequest, public: public} }

// dateValue returns the Date header value for now, formatted once a second.
func (c *h1Conn) dateValue() []byte {
	now := time.Now()
	if sec := now.Unix(); sec != c.dateSec || c.date == nil {
		c.date = now.UTC().AppendFormat(c.date[:0], http.TimeFormat)
		c.dateSec = sec
	}
	return c.date
}

// readFrom copies src to w with the connection's buffer.
func (c *h1Conn) readFrom(w io.Writer, src io.Reader) (int64, error) {
	if c.copyBuf == nil {
		c.copyBuf = make([]byte, 32<<10)
	}
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{src}, c.copyBuf)
}

// discardBuf returns a scratch buffer for dropping body bytes.
func (c *h1Conn) discardBuf() []byte {
	if c.copyBuf == nil {
		c.copyBuf = make([]byte, 32<<10)
	}
	return c.copyBuf
}
