package phpfpm

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"

	"github.com/hostd/hostd/host/cgi"
	"github.com/hostd/hostd/host/fastcgi"
)

// errTimeout is the cause of a request context that hit Config.Timeout.
var errTimeout = errors.New("phpfpm: request time limit exceeded")

// dial connects to the pool's socket. The socket's directory is the
// server's alone, and the request may run on a tenant thread whose
// effective ids are the tenant's, so the connect happens on a fresh
// goroutine, which never runs on a switched thread.
func (p *Pool) dial(ctx context.Context) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", p.sock)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// ServeScript runs the resolved PHP script s for r in the tenant's pool,
// starting the pool when it is not running, and writes its response to w:
// the request body (at most MaxBody) is streamed to PHP, the response
// streamed back, PHP's messages go to the tenant's error log, and Timeout
// bounds the whole request (504 when nothing was sent yet). It is safe for
// concurrent use.
func (p *Pool) ServeScript(w http.ResponseWriter, r *http.Request, s cgi.Script) {
	log := p.logger.With("script", s.Name)
	body, contentLength, code, err := cgi.RequestBody(r, p.cfg.MaxBody)
	if code != 0 {
		if err != nil {
			log.Info("php: reading request body", "err", err)
		}
		httpError(w, code)
		return
	}
	if body != nil && r.ProtoMajor == 1 {
		// PHP's output is streamed while the body is still being sent (see
		// the CGI handler).
		_ = http.NewResponseController(w).EnableFullDuplex()
	}
	if err := p.begin(); err != nil {
		log.Warn("php: pool not available", "err", err)
		httpError(w, http.StatusServiceUnavailable)
		return
	}
	defer p.end()
	ctx, cancel := context.WithTimeoutCause(r.Context(), p.cfg.Timeout, errTimeout)
	defer cancel()

	ev := &events{emit: func(e []byte) { p.logLine(s.Filename, e) }}
	defer ev.flush()
	resp, err := p.client.Do(ctx, &fastcgi.Request{
		Params: cgi.Env(r, s, contentLength, p.envCfg),
		Body:   body,
		Stderr: ev.write,
	})
	if err != nil {
		p.failed(w, r, ctx, log, "php: request not sent", err)
		return
	}
	defer resp.Close()
	br := bufio.NewReaderSize(resp, 8192)
	cr, err := cgi.ReadResponse(br)
	if err != nil {
		p.failed(w, r, ctx, log, "php: bad response", err)
		return
	}
	if cr.LocalRedirect != "" {
		if _, err := io.Copy(io.Discard, br); err != nil {
			p.failed(w, r, ctx, log, "php: reading response", err)
			return
		}
		resp.Close()
		ev.flush()
		cgi.LocalRedirect(w, r, cr.LocalRedirect, p.cfg.LocalRedirect, log)
		return
	}
	var dst io.Writer = w
	flusher, _ := w.(http.Flusher)
	if !cr.WriteHeader(w) {
		dst, flusher = io.Discard, nil
	}
	buf := make([]byte, 32<<10)
	for {
		n, rerr := br.Read(buf)
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				log.Info("php: client went away", "err", err)
				return
			}
			if flusher != nil && br.Buffered() == 0 && !resp.Buffered() {
				flusher.Flush()
			}
		}
		if rerr == io.EOF {
			return
		}
		if rerr != nil {
			switch {
			case r.Context().Err() != nil:
				log.Info("php: client went away")
			case context.Cause(ctx) == errTimeout:
				log.Warn("php: time limit exceeded while sending the body", "timeout", p.cfg.Timeout)
			default:
				log.Warn("php: reading the response", "err", rerr)
			}
			panic(http.ErrAbortHandler) // the client must not take a cut body as complete
		}
	}
}

// failed answers a request that failed before its response started.
func (p *Pool) failed(w http.ResponseWriter, r *http.Request, ctx context.Context, log *slog.Logger, msg string, err error) {
	switch {
	case r.Context().Err() != nil:
		log.Info("php: client went away")
	case context.Cause(ctx) == errTimeout:
		log.Warn("php: time limit exceeded before the headers", "timeout", p.cfg.Timeout)
		httpError(w, http.StatusGatewayTimeout)
	case errors.Is(err, fastcgi.ErrOverloaded):
		log.Warn(msg, "err", err)
		httpError(w, http.StatusServiceUnavailable)
	default:
		log.Warn(msg, "err", err)
		httpError(w, http.StatusBadGateway)
	}
}

// httpError answers with a status and its standard text, never details.
func httpError(w http.ResponseWriter, code int) {
	http.Error(w, http.StatusText(code), code)
}
