package scriptingtest

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/hostd/hostd/host/session"
	"github.com/hostd/hostd/scripting"
)

// RequestOptions describe a fake request. Zero fields get defaults: method
// GET, URI "/", host "example.test", scheme "https", remote address
// "192.0.2.1".
type RequestOptions struct {
	Method     string
	URI        string
	Host       string
	Scheme     string
	RemoteAddr string
	// RemotePort is the client's port (0: unknown).
	RemotePort int
	Headers    map[string]string
	// MultiHeaders are request headers with several values.
	MultiHeaders map[string][]string
	Body         string
	// BodyLimit makes Body fail with scripting.ErrBodyTooLarge when the
	// body is longer (0: no limit).
	BodyLimit int
	// ResponseLimit makes Write fail with scripting.ErrResponseTooLarge
	// past that many bytes (0: no limit).
	ResponseLimit int
	// Vars are the initial request variables.
	Vars map[string]any
	// Sessions makes r.session (nil: a private memory store); SessionID
	// is the session cookie the client sent.
	Sessions  *session.Manager
	SessionID string
}

// Request is a fake scripting.Request that records what a hook does. It is
// not safe for concurrent use (neither is a real request).
type Request struct {
	opt        RequestOptions
	path       string
	query      string
	headersIn  http.Header
	headersOut http.Header
	status     int
	resp       bytes.Buffer
	vars       map[string]any
	logBuf     bytes.Buffer
	logger     *slog.Logger
	sess       *session.Session

	// Rewrites lists the arguments of successful SetPath calls.
	Rewrites []string
	// HeadersAtWrite is a copy of the response headers at the first
	// Write (nil: no Write yet).
	HeadersAtWrite http.Header
}

var _ scripting.Request = (*Request)(nil)

// NewRequest returns a fake request.
func NewRequest(o RequestOptions) *Request {
	if o.Method == "" {
		o.Method = http.MethodGet
	}
	if o.URI == "" {
		o.URI = "/"
	}
	if o.Host == "" {
		o.Host = "example.test"
	}
	if o.Scheme == "" {
		o.Scheme = "https"
	}
	if o.RemoteAddr == "" {
		o.RemoteAddr = "192.0.2.1"
	}
	r := &Request{opt: o, headersIn: http.Header{}, headersOut: http.Header{}, vars: map[string]any{}}
	for k, v := range o.Headers {
		r.headersIn.Add(k, v)
	}
	for k, vs := range o.MultiHeaders {
		for _, v := range vs {
			r.headersIn.Add(k, v)
		}
	}
	for k, v := range o.Vars {
		r.vars[k] = v
	}
	p, q, _ := strings.Cut(o.URI, "?")
	if up, err := url.PathUnescape(p); err == nil {
		p = up
	}
	r.path, r.query = p, q
	r.logger = slog.New(slog.NewTextHandler(&r.logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return r
}

func (r *Request) Method() string { return r.opt.Method }
func (r *Request) URI() string    { return r.opt.URI }
func (r *Request) Path() string   { return r.path }

// SetPath rewrites the path (scripting.Hook split and checked it).
func (r *Request) SetPath(path, query string, hasQuery bool) error {
	r.path = path
	p := path
	if hasQuery {
		r.query = query
		p += "?" + query
	}
	r.Rewrites = append(r.Rewrites, p)
	return nil
}

func (r *Request) Query() string           { return r.query }
func (r *Request) Host() string            { return r.opt.Host }
func (r *Request) Scheme() string          { return r.opt.Scheme }
func (r *Request) RemoteAddr() string      { return r.opt.RemoteAddr }
func (r *Request) RemotePort() int         { return r.opt.RemotePort }
func (r *Request) HeadersIn() http.Header  { return r.headersIn }
func (r *Request) HeadersOut() http.Header { return r.headersOut }

func (r *Request) Body() ([]byte, error) {
	if r.opt.BodyLimit > 0 && len(r.opt.Body) > r.opt.BodyLimit {
		return nil, scripting.ErrBodyTooLarge
	}
	return []byte(r.opt.Body), nil
}

func (r *Request) Status() int          { return r.status }
func (r *Request) SetStatus(code int)   { r.status = code }
func (r *Request) Vars() map[string]any { return r.vars }
func (r *Request) Logger() *slog.Logger { return r.logger }

// Write appends p to the recorded response body.
func (r *Request) Write(p []byte) (int, error) {
	if r.HeadersAtWrite == nil {
		r.HeadersAtWrite = r.headersOut.Clone()
		if r.status == 0 {
			r.status = http.StatusOK
		}
	}
	if r.opt.ResponseLimit > 0 && r.resp.Len()+len(p) > r.opt.ResponseLimit {
		return 0, scripting.ErrResponseTooLarge
	}
	return r.resp.Write(p)
}

// Response returns the response body written so far.
func (r *Request) Response() string { return r.resp.String() }

// LogText returns what the hook logged, in slog's text format.
func (r *Request) LogText() string { return r.logBuf.String() }

// Reset clears what the last run recorded (response, status, headers out,
// log, rewrites) and restores the options' path, query and vars, so that
// one Request can be reused by benchmarks.
func (r *Request) Reset() {
	r.resp.Reset()
	r.logBuf.Reset()
	r.status = 0
	clear(r.headersOut)
	r.HeadersAtWrite = nil
	r.Rewrites = r.Rewrites[:0]
	clear(r.vars)
	for k, v := range r.opt.Vars {
		r.vars[k] = v
	}
	p, q, _ := strings.Cut(r.opt.URI, "?")
	if up, err := url.PathUnescape(p); err == nil {
		p = up
	}
	r.path, r.query = p, q
}
