package fastcgi

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for Config.
const (
	DefaultMaxConns    = 4
	DefaultMaxIdleTime = 30 * time.Second
)

// bodyChunk is the largest FCGI_STDIN record the client writes.
const bodyChunk = 32 << 10

// Config configures a Client. Every field but Dial has a usable zero value.
type Config struct {
	// Dial opens a new connection to the application. Required.
	Dial func(ctx context.Context) (net.Conn, error)
	// MaxConns bounds the connections open at once, busy or idle (default
	// 4). A php-fpm worker serves one connection for as long as it is
	// kept, so MaxConns must not exceed the pool's workers; requests
	// beyond it wait for a connection (bounded by their context).
	MaxConns int
	// MaxIdleTime closes a kept connection that has been idle this long
	// instead of reusing it (default 30s).
	MaxIdleTime time.Duration
	// OneShot sends each request on a connection of its own, closed after
	// it (FCGI_KEEP_CONN unset), as nginx does by default. php-fpm's
	// ondemand process manager needs it: it counts a worker waiting on a
	// kept connection as idle, so a connection dialled while all workers
	// sit on kept ones waits for a worker it never starts.
	OneShot bool
}

// Stats is a snapshot of a Client's connections.
type Stats struct {
	Busy     int    // connections carrying a request now
	Idle     int    // kept connections waiting for the next request
	Dials    uint64 // connections opened since New
	Requests uint64 // requests sent since New
}

// Client sends requests to one FastCGI application over a pool of kept
// connections. It is safe for concurrent use.
type Client struct {
	dial        func(ctx context.Context) (net.Conn, error)
	maxIdleTime time.Duration
	oneShot     bool
	// slots holds one token per request in progress. A request takes a
	// kept connection when there is one and dials only when there is
	// none, so the connections open never outnumber the slots.
	slots chan struct{}

	mu     sync.Mutex
	idle   []*conn // most recently used last
	closed bool

	busy     atomic.Int64
	dials    atomic.Uint64
	requests atomic.Uint64
}

// New returns a Client for cfg; it connects lazily.
func New(cfg Config) *Client {
	c := &Client{
		dial:        cfg.Dial,
		maxIdleTime: cfg.MaxIdleTime,
		oneShot:     cfg.OneShot,
		slots:       make(chan struct{}, max(cfg.MaxConns, 0)),
	}
	if cfg.MaxConns <= 0 {
		c.slots = make(chan struct{}, DefaultMaxConns)
	}
	if c.maxIdleTime <= 0 {
		c.maxIdleTime = DefaultMaxIdleTime
	}
	return c
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	idle := len(c.idle)
	c.mu.Unlock()
	return Stats{Busy: int(c.busy.Load()), Idle: idle, Dials: c.dials.Load(), Requests: c.requests.Load()}
}

// Close closes the idle connections; busy ones are closed when their
// requests end. Do returns ErrClosed afterwards. Close is idempotent.
func (c *Client) Close() {
	c.mu.Lock()
	c.closed = true
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	for _, cn := range idle {
		cn.nc.Close()
	}
}

// CloseIdle closes the kept connections, for instance after the
// application was restarted.
func (c *Client) CloseIdle() {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	for _, cn := range idle {
		cn.nc.Close()
	}
}

// conn is one connection to the application.
type conn struct {
	nc       net.Conn
	br       *bufio.Reader
	lastUsed time.Time
}

// get returns a kept connection or a new one; reused tells which.
func (c *Client) get(ctx context.Context) (cn *conn, reused bool, err error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, false, fmt.Errorf("fastcgi: waiting for a connection: %w", context.Cause(ctx))
	}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			<-c.slots
			return nil, false, ErrClosed
		}
		if n := len(c.idle); n > 0 {
			cn = c.idle[n-1]
			c.idle = c.idle[:n-1]
		}
		c.mu.Unlock()
		if cn == nil {
			break
		}
		if time.Since(cn.lastUsed) < c.maxIdleTime && alive(cn.nc) {
			return cn, true, nil
		}
		cn.nc.Close() // the application closed it, or it sat too long
		cn = nil
	}
	nc, err := c.dial(ctx)
	if err != nil {
		<-c.slots
		return nil, false, fmt.Errorf("fastcgi: connect: %w", err)
	}
	c.dials.Add(1)
	return &conn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10)}, false, nil
}

// put returns a connection after a request: kept when reusable, else
// closed. It frees the request's slot either way.
func (c *Client) put(cn *conn, reusable bool) {
	defer func() { <-c.slots }()
	if reusable {
		cn.lastUsed = time.Now()
		c.mu.Lock()
		if !c.closed {
			c.idle = append(c.idle, cn)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
	cn.nc.Close()
}

// Request is one responder request.
type Request struct {
	// Params are the CGI/1.1 environment variables, as "NAME=value".
	Params []string
	// Body is streamed as FCGI_STDIN while the response is read; nil sends
	// an empty stream. The caller bounds its size (CONTENT_LENGTH must
	// match).
	Body io.Reader
	// Stderr receives the FCGI_STDERR stream, record by record, on the
	// goroutine that reads the response; nil discards it. The slice is
	// only valid during the call.
	Stderr func(p []byte)
}

// Do sends req and returns the response once the connection is ready;
// the response's FCGI_STDOUT stream is read from the Response, and the
// request ends with Response.Close, which the caller must call. ctx bounds
// the whole exchange: when it ends, reads and writes fail and the
// connection is dropped (php-fpm then aborts the script). A request
// without body whose connection the application closes before answering
// (a kept connection it dropped; with OneShot, any, such as one a worker
// accepted as its master was killed) is retried once on a new connection.
func (c *Client) Do(ctx context.Context, req *Request) (*Response, error) {
	if c.dial == nil {
		return nil, errors.New("fastcgi: Config.Dial is nil")
	}
	head := appendBeginRequest(make([]byte, 0, 1024), !c.oneShot)
	head = appendRecords(head, typeParams, encodeParams(nil, req.Params))
	head = appendEmpty(head, typeParams)
	if req.Body == nil {
		head = appendEmpty(head, typeStdin)
	}
	for attempt := 0; ; attempt++ {
		cn, reused, err := c.get(ctx)
		if err != nil {
			return nil, err
		}
		resp := &Response{c: c, cn: cn, stderr: req.Stderr}
		resp.stop = context.AfterFunc(ctx, func() { cn.nc.SetDeadline(time.Unix(1, 0)) })
		c.busy.Add(1)
		if _, err := cn.nc.Write(head); err != nil {
			resp.abort()
			if reused && attempt == 0 && ctx.Err() == nil {
				continue // the kept connection was gone
			}
			return nil, fmt.Errorf("fastcgi: send request: %w", err)
		}
		if req.Body != nil {
			resp.writeDone = make(chan error, 1)
			go resp.writeBody(req.Body)
		} else if (reused || c.oneShot) && attempt == 0 {
			// Nothing more to send: check that the application took the
			// request before handing the response out, so that a
			// connection closed at the same moment (a kept one the
			// application dropped, or one a dying worker accepted) is
			// retried.
			if _, err := cn.br.Peek(1); err != nil && ctx.Err() == nil && isClosed(err) {
				resp.abort()
				continue
			}
		}
		c.requests.Add(1)
		return resp, nil
	}
}

// Response is the application's answer to one request: its FCGI_STDOUT
// stream. A Response is not safe for concurrent use.
type Response struct {
	c      *Client
	cn     *conn
	stop   func() bool // stops the context's deadline hook
	stderr func([]byte)

	writeDone chan error // the body writer's result; nil without body
	remaining int        // bytes of the current stdout record still to read
	padding   int        // its padding
	done      bool       // FCGI_END_REQUEST seen
	err       error      // sticky read error
	appStatus int
	closed    bool
	hbuf      [headerLen]byte
	scratch   []byte // stderr content and ignored records
}

// writeBody streams body as FCGI_STDIN records and ends the stream.
func (r *Response) writeBody(body io.Reader) {
	buf := make([]byte, headerLen+bodyChunk)
	for {
		n, rerr := body.Read(buf[headerLen:])
		if n > 0 {
			putHeader(buf, typeStdin, n)
			if _, err := r.cn.nc.Write(buf[:headerLen+n]); err != nil {
				r.writeDone <- fmt.Errorf("fastcgi: send body: %w", err)
				return
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			r.writeDone <- fmt.Errorf("fastcgi: read request body: %w", rerr)
			return
		}
	}
	putHeader(buf, typeStdin, 0)
	_, err := r.cn.nc.Write(buf[:headerLen])
	r.writeDone <- err
}

// Read reads the FCGI_STDOUT stream; it returns io.EOF once the
// application ended the request. FCGI_STDERR records met on the way go to
// Request.Stderr.
func (r *Response) Read(p []byte) (int, error) {
	for r.remaining == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if err := r.next(); err != nil {
			r.err = err
			return 0, err
		}
	}
	if len(p) > r.remaining {
		p = p[:r.remaining]
	}
	n, err := r.cn.br.Read(p)
	r.remaining -= n
	if err != nil {
		r.err = fmt.Errorf("fastcgi: read response: %w", err)
		return n, r.err
	}
	if r.remaining == 0 && r.padding > 0 {
		if _, err := r.cn.br.Discard(r.padding); err != nil {
			r.err = fmt.Errorf("fastcgi: read response: %w", err)
		}
		r.padding = 0
	}
	return n, nil
}

// Buffered reports whether response bytes are already received and
// waiting, so that a caller streaming the response can flush only when it
// would otherwise block.
func (r *Response) Buffered() bool { return r.cn.br.Buffered() > 0 }

// AppStatus returns the application's exit status from FCGI_END_REQUEST
// (valid once Read returned io.EOF).
func (r *Response) AppStatus() int { return r.appStatus }

// next reads records until stdout content is available, the request ended
// (io.EOF) or an error.
func (r *Response) next() error {
	for {
		if r.done {
			return io.EOF
		}
		h, err := readHeader(r.cn.br, r.hbuf[:])
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // the application closed mid-request
			}
			return fmt.Errorf("fastcgi: read response: %w", err)
		}
		if h.id != requestID && h.typ != typeUnknownType && h.typ != typeGetValuesResult {
			return fmt.Errorf("%w: record for request %d", ErrProtocol, h.id)
		}
		switch h.typ {
		case typeStdout:
			if h.contentLength == 0 {
				if err := r.skip(int(h.paddingLength)); err != nil {
					return err
				}
				continue // end of the stdout stream
			}
			r.remaining, r.padding = int(h.contentLength), int(h.paddingLength)
			return nil
		case typeStderr:
			b, err := r.content(h)
			if err != nil {
				return err
			}
			if len(b) > 0 && r.stderr != nil {
				r.stderr(b)
			}
		case typeEndRequest:
			b, err := r.content(h)
			if err != nil {
				return err
			}
			if len(b) < 8 {
				return fmt.Errorf("%w: short FCGI_END_REQUEST", ErrProtocol)
			}
			r.appStatus = int(int32(binary.BigEndian.Uint32(b)))
			r.done = true
			switch b[4] {
			case statusRequestComplete:
				return io.EOF
			case statusOverloaded:
				return ErrOverloaded
			default:
				return fmt.Errorf("%w: request refused with protocol status %d", ErrProtocol, b[4])
			}
		default: // management records and types this client does not use
			if _, err := r.content(h); err != nil {
				return err
			}
		}
	}
}

// content reads a record's content (and skips its padding).
func (r *Response) content(h header) ([]byte, error) {
	n := int(h.contentLength)
	if cap(r.scratch) < n {
		r.scratch = make([]byte, n)
	}
	b := r.scratch[:n]
	if _, err := io.ReadFull(r.cn.br, b); err != nil {
		return nil, fmt.Errorf("fastcgi: read response: %w", err)
	}
	return b, r.skip(int(h.paddingLength))
}

func (r *Response) skip(n int) error {
	if n == 0 {
		return nil
	}
	if _, err := r.cn.br.Discard(n); err != nil {
		return fmt.Errorf("fastcgi: read response: %w", err)
	}
	return nil
}

// Close ends the request. A response read to its end (io.EOF) whose body
// was sent completely returns the connection to the pool; otherwise the
// connection is closed, which makes php-fpm abort the script. Close waits
// for the body writer, so the request body is not touched after it
// returns. Close is idempotent and returns the body writer's error.
func (r *Response) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	reusable := r.done && r.err == io.EOF && r.remaining == 0 && !r.c.oneShot
	var werr error
	if r.writeDone != nil {
		if !reusable {
			r.cn.nc.Close() // unblocks a writer stuck on a full socket
		}
		select {
		case werr = <-r.writeDone:
		default:
			// The application answered before reading all of the
			// body: the stream is out of step, drop the connection.
			reusable = false
			r.cn.nc.Close()
			werr = <-r.writeDone
		}
		if werr != nil {
			reusable = false
		}
	}
	if !r.stop() { // the context ended: the deadline is set
		reusable = false
	}
	r.c.busy.Add(-1)
	r.c.put(r.cn, reusable)
	if werr != nil && !reusable && r.err == io.EOF {
		return werr
	}
	return nil
}

// abort drops the connection of a request that could not be sent.
func (r *Response) abort() {
	r.closed = true
	r.stop()
	r.c.busy.Add(-1)
	r.c.put(r.cn, false)
}

// isClosed reports whether err means the peer closed the connection.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err)
}
