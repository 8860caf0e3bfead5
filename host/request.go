package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hostd/hostd/host/session"
	"github.com/hostd/hostd/scripting"
)

// hookRequest is the scripting.Request a hook sees: a view of one HTTP
// request and its response writer, with the path hooks may rewrite. It is
// used by one goroutine at a time (the tenant thread running the hooks).
type hookRequest struct {
	r      *http.Request
	resp   hookResponse // the response: writer, state, status (hookresponse.go)
	v      *vhost
	logger *slog.Logger

	path, query string
	body        []byte
	bodyErr     error
	bodyRead    bool
	vars        map[string]any
	sess        *session.Session // r.session, nil until used (session.go)
	sessCookie  string           // the session's Set-Cookie, "" when none
	// runCtx is the context of the hook run in progress (it carries the
	// run's place in the CPU gate), nil between runs.
	runCtx context.Context
}

// pauseWritesAfter is how much of a hook's output goes to the client
// before a write may wait for it: the first bytes fit in the
// connection's buffers, so only writes past them give the run's CPU
// share back while they wait (a client that reads slowly, or not at all,
// holds its own request, not the tenant's share).
const pauseWritesAfter = 32 << 10

func (h *hookRequest) Method() string { return h.r.Method }
func (h *hookRequest) URI() string    { return h.r.RequestURI }
func (h *hookRequest) Path() string   { return h.path }
func (h *hookRequest) Query() string  { return h.query }
func (h *hookRequest) Host() string   { return canonicalHost(h.r.Host) }

func (h *hookRequest) Scheme() string {
	if h.r.TLS != nil {
		return "https"
	}
	return "http"
}

func (h *hookRequest) RemoteAddr() string {
	ip, _, err := net.SplitHostPort(h.r.RemoteAddr)
	if err != nil {
		return h.r.RemoteAddr
	}
	return ip
}

func (h *hookRequest) RemotePort() int {
	_, port, _ := net.SplitHostPort(h.r.RemoteAddr)
	n, _ := strconv.Atoi(port)
	return n
}

// SetPath rewrites the request path internally (scripting.Hook split and
// checked it).
func (h *hookRequest) SetPath(path, query string, hasQuery bool) error {
	if h.resp.done() {
		return errors.New("set_path: the response was already sent")
	}
	h.path = path
	if hasQuery {
		h.query = query
	}
	return nil
}

func (h *hookRequest) HeadersIn() http.Header { return h.r.Header }

func (h *hookRequest) HeadersOut() http.Header { return h.resp.header() }

func (h *hookRequest) Body() ([]byte, error) {
	if h.bodyRead {
		return h.body, h.bodyErr
	}
	h.bodyRead = true
	if h.r.Body == nil || h.r.Body == http.NoBody {
		return nil, nil
	}
	limit := int64(h.v.cfg.Limits.MaxBody)
	// Reading waits for the client: the run's CPU share is free meanwhile.
	resume := scripting.PauseForIO(h.runContext())
	b, err := io.ReadAll(io.LimitReader(h.r.Body, limit+1))
	resume()
	switch {
	case err != nil:
		h.bodyErr = fmt.Errorf("read request body: %w", err)
	case int64(len(b)) > limit:
		h.bodyErr = scripting.ErrBodyTooLarge
	default:
		h.body = b
	}
	return h.body, h.bodyErr
}

func (h *hookRequest) Status() int { return h.resp.status }

func (h *hookRequest) SetStatus(code int) {
	if code >= 100 && code <= 999 {
		h.resp.status = code
	}
}

func (h *hookRequest) Write(p []byte) (int, error) {
	if h.resp.done() {
		return 0, errors.New("write: the response was already sent (log phase)")
	}
	if h.resp.written+int64(len(p)) > int64(h.v.cfg.Limits.MaxResponse) {
		return 0, scripting.ErrResponseTooLarge
	}
	if h.resp.open() {
		if err := h.saveSession(); err != nil {
			return 0, err
		}
		h.sendHeader(h.resp.status)
	}
	if h.resp.written+int64(len(p)) <= pauseWritesAfter {
		n, err := h.resp.w.Write(p)
		h.resp.written += int64(n)
		return n, err
	}
	resume := scripting.PauseForIO(h.runContext())
	n, err := h.resp.w.Write(p)
	resume()
	h.resp.written += int64(n)
	return n, err
}

// runContext is the context of the hook run in progress, or the
// request's outside a run.
func (h *hookRequest) runContext() context.Context {
	if h.runCtx != nil {
		return h.runCtx
	}
	return h.r.Context()
}

func (h *hookRequest) sendHeader(code int) {
	if code == 0 {
		code = http.StatusOK
	}
	h.keepSessionCookie() // session.go
	h.resp.send(code)
}

func (h *hookRequest) Vars() map[string]any {
	if h.vars == nil {
		h.vars = make(map[string]any)
	}
	return h.vars
}

func (h *hookRequest) Logger() *slog.Logger {
	if h.logger == nil {
		h.logger = h.v.errLog.With("method", h.r.Method, "path", h.r.URL.Path, "remote", h.RemoteAddr())
	}
	return h.logger
}

// url returns the request URL as hooks left it, for the handlers after them.
func (h *hookRequest) url() *url.URL {
	u := *h.r.URL
	u.Path, u.RawPath, u.RawQuery = h.path, "", h.query
	return &u
}
