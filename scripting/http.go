package scripting

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"
)

// HTTPClient makes the outbound requests of hostd.http.request
// (Hostd::HTTP.request) for one tenant. host passes the vhost's
// *outbound.Client, which enforces the vhost's outbound allowlist. An
// implementation must be safe for concurrent use; Do blocks only the
// calling hook run.
type HTTPClient interface {
	Do(ctx context.Context, req *HTTPRequest) (*HTTPResponse, error)
}

// HTTPRequest is one outbound request of a hook.
type HTTPRequest struct {
	Method string // default GET
	URL    string // http:// or https://
	Header http.Header
	Body   []byte
	// Timeout bounds the whole exchange (0: the rest of the run's time);
	// it never extends past the run's deadline.
	Timeout time.Duration
	// MaxBody bounds the response body (0: the client's default).
	MaxBody int64
}

// HTTPResponse is what an outbound request returned.
type HTTPResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// ErrNoOutbound is the error of hostd.http.request in an engine whose
// Config has no HTTP client: the vhost has no outbound key.
var ErrNoOutbound = errors.New("outbound HTTP is not enabled for this site (vhost key outbound)")

// ParseHTTPRequest builds an HTTPRequest from the table or Hash a hook
// passed (keys method, url, headers, body, timeout, max_body), as both
// engines convert it: strings, numbers and a map of header names to a
// string or a list of strings. Bodies are bounded by maxInput.
func ParseHTTPRequest(m map[string]any, maxInput int) (*HTTPRequest, error) {
	r := &HTTPRequest{Method: http.MethodGet, Header: http.Header{}}
	for k, v := range m {
		switch k {
		case "method":
			s, ok := v.(string)
			if !ok || !ValidHeaderName(s) {
				return nil, fmt.Errorf("method must be a method name such as \"GET\"")
			}
			r.Method = strings.ToUpper(s)
		case "url":
			s, ok := v.(string)
			if !ok || s == "" {
				return nil, fmt.Errorf("url must be a string")
			}
			r.URL = s
		case "body":
			switch b := v.(type) {
			case nil:
			case string:
				if len(b) > maxInput {
					return nil, fmt.Errorf("body is longer than the input limit (%d bytes)", maxInput)
				}
				r.Body = []byte(b)
			default:
				return nil, fmt.Errorf("body must be a string")
			}
		case "headers":
			h, ok := v.(map[string]any)
			if !ok {
				if l, isList := v.([]any); !isList || len(l) > 0 {
					return nil, fmt.Errorf("headers must be a table of name = value")
				}
			}
			for name, val := range h {
				if !ValidHeaderName(name) {
					return nil, fmt.Errorf("invalid header name %q", name)
				}
				var vals []string
				switch x := val.(type) {
				case string:
					vals = []string{x}
				case int64, float64:
					vals = []string{fmt.Sprint(x)}
				case []any:
					for _, e := range x {
						s, ok := e.(string)
						if !ok {
							return nil, fmt.Errorf("header %s: values must be strings", name)
						}
						vals = append(vals, s)
					}
				default:
					return nil, fmt.Errorf("header %s: value must be a string or a list of strings", name)
				}
				for _, s := range vals {
					if !ValidHeaderValue(s) {
						return nil, fmt.Errorf("header %s: invalid value", name)
					}
					r.Header.Add(name, s)
				}
			}
		case "timeout":
			f, ok := number(v)
			if !ok || f <= 0 || math.IsNaN(f) || f > 3600 {
				return nil, fmt.Errorf("timeout must be a positive number of seconds")
			}
			r.Timeout = time.Duration(f * float64(time.Second))
		case "max_body":
			f, ok := number(v)
			if !ok || f < 1 || f != math.Trunc(f) || f > float64(maxInput) {
				return nil, fmt.Errorf("max_body must be a byte count from 1 to %d", maxInput)
			}
			r.MaxBody = int64(f)
		default:
			return nil, fmt.Errorf("unknown key %q (want method, url, headers, body, timeout, max_body)", k)
		}
	}
	if r.URL == "" {
		return nil, fmt.Errorf("url is missing")
	}
	return r, nil
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// Value returns the response as hooks see it: status (int64), headers (a
// map of lower-case names to a string, or a list of strings for a
// repeated header) and body (a string).
func (r *HTTPResponse) Value() map[string]any {
	h := make(map[string]any, len(r.Header))
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		h[strings.ToLower(k)] = multiValue(r.Header[k])
	}
	return map[string]any{"status": int64(r.Status), "headers": h, "body": string(r.Body)}
}

// HTTPDeadline returns the context of an outbound request of a run: the
// run's parent context bounded by the run's deadline and by timeout (when
// positive). The caller must call cancel.
func HTTPDeadline(parent context.Context, runDeadline time.Time, timeout time.Duration) (context.Context, context.CancelFunc) {
	dl := runDeadline
	if timeout > 0 {
		if t := time.Now().Add(timeout); t.Before(dl) {
			dl = t
		}
	}
	return context.WithDeadline(parent, dl)
}

// Waiter is what a host may put in a run's context (WithWaiter) to learn
// that the run is about to wait for something outside the VM, such as an
// outbound request: Pause gives back what the run holds that other runs
// could use meanwhile (host: the tenant's place in the CPU gate), and the
// resume function it returns takes it again. Both are called from the
// run's goroutine.
type Waiter interface {
	Pause() (resume func())
}

type waiterKey struct{}

// WithWaiter returns ctx carrying w for the engines' PauseForIO.
func WithWaiter(ctx context.Context, w Waiter) context.Context {
	return context.WithValue(ctx, waiterKey{}, w)
}

// PauseForIO tells the host of the run whose context is ctx that the run
// is about to wait for I/O; call the function it returns when the wait is
// over. Without a Waiter in ctx it does nothing.
func PauseForIO(ctx context.Context) (resume func()) {
	if w, ok := ctx.Value(waiterKey{}).(Waiter); ok {
		return w.Pause()
	}
	return func() {}
}
