package host

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/hostd/hostd/sandbox"
)

// runAsTenant is the stage that runs the rest of the path with the
// tenant's identity, per the vhost's sandbox mode (vhost.run: the thread
// budget, then the sandbox). A run that fails is answered by runFailed.
// When hooks ran, the log phase follows once the response is complete.
func runAsTenant(x *exchange, next func(*exchange)) {
	v, r := x.v, x.r
	if err := v.run(r.Context(), func() { traceTID(x.w); next(x) }); err != nil {
		v.runFailed(x.w, r, err)
		return
	}
	if x.hr != nil {
		v.runLogPhase(x.hr, x.rec.statusCode())
	}
}

// runFailed ends a request whose tenant function did not return normally.
// Aborts stay aborts: http.ErrAbortHandler (a handler cutting a response it
// cannot finish, such as a CGI script killed mid-body), which the sandbox
// recovered on the tenant's thread and handed back, is raised again here on
// the connection's goroutine, so that net/http cuts the connection (HTTP/1.1:
// closed without the last chunk; HTTP/2: RST_STREAM) and the client sees a
// transfer error, never a complete-looking body. Any other panic is logged
// with its stack and answered 500 when nothing was sent yet, else aborted
// the same way; so is a run that could not start (503 when nothing was sent).
func (v *vhost) runFailed(w http.ResponseWriter, r *http.Request, err error) {
	sent := false
	if rec, ok := w.(*recorder); ok {
		sent = rec.status != 0
	}
	var pe *sandbox.PanicError
	switch {
	case errors.As(err, &pe) && pe.Value == http.ErrAbortHandler:
		panic(http.ErrAbortHandler)
	case errors.As(err, &pe):
		v.logger.Error("panic serving a request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(pe.Value),
			"stack", string(pe.Stack))
		if sent {
			panic(http.ErrAbortHandler)
		}
		httpError(w, http.StatusInternalServerError, "the request could not be served")
	default:
		v.logger.Warn("request not served", "err", err)
		if sent {
			panic(http.ErrAbortHandler)
		}
		httpError(w, http.StatusServiceUnavailable, "the site is busy, try again")
	}
}
