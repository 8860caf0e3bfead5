package hookrun

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/hostd/hostd/scripting"
)

// request is the synthetic request of a run; it implements
// scripting.Request.
type request struct {
	method, uri, path, query, host string
	in, out                        http.Header
	body                           []byte
	maxBody, maxResp               int64
	status                         int
	wrote                          bool
	resp                           bytes.Buffer
	vars                           map[string]any
	logger                         *slog.Logger
}

var _ scripting.Request = (*request)(nil)

func (r *request) Method() string { return r.method }
func (r *request) URI() string    { return r.uri }
func (r *request) Path() string   { return r.path }

func (r *request) SetPath(path, query string, hasQuery bool) error {
	r.path = path
	if hasQuery {
		r.query = query
	}
	return nil
}

func (r *request) Query() string           { return r.query }
func (r *request) Host() string            { return r.host }
func (r *request) Scheme() string          { return "https" }
func (r *request) RemoteAddr() string      { return "127.0.0.1" }
func (r *request) RemotePort() int         { return 0 }
func (r *request) HeadersIn() http.Header  { return r.in }
func (r *request) HeadersOut() http.Header { return r.out }

func (r *request) Body() ([]byte, error) {
	if r.maxBody > 0 && int64(len(r.body)) > r.maxBody {
		return nil, scripting.ErrBodyTooLarge
	}
	return r.body, nil
}

func (r *request) Status() int        { return r.status }
func (r *request) SetStatus(code int) { r.status = code }

func (r *request) Write(p []byte) (int, error) {
	if r.maxResp > 0 && int64(r.resp.Len()+len(p)) > r.maxResp {
		return 0, scripting.ErrResponseTooLarge
	}
	if !r.wrote {
		r.wrote = true
		if r.status == 0 {
			r.status = http.StatusOK
		}
	}
	return r.resp.Write(p)
}

func (r *request) Vars() map[string]any { return r.vars }
func (r *request) Logger() *slog.Logger { return r.logger }

// Session: a one-off run has no session store.
func (r *request) Session() (scripting.Session, error) {
	return nil, errors.New("r.session is not available in hostd hook run: " + scripting.ErrNoSession.Error())
}

func newRequest(method, target, host string, h http.Header, body []byte, logger *slog.Logger) *request {
	if method == "" {
		method = http.MethodGet
	}
	if target == "" {
		target = "/"
	}
	if host == "" {
		host = "localhost"
	}
	if h == nil {
		h = http.Header{}
	}
	p, q, _ := strings.Cut(target, "?")
	if up, err := url.PathUnescape(p); err == nil {
		p = up
	}
	return &request{method: strings.ToUpper(method), uri: target, path: p, query: q, host: host,
		in: h, out: http.Header{}, body: body, vars: map[string]any{}, logger: logger}
}
