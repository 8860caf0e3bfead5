package host

import "net/http"

// hookState is where the response of a hook request stands. It only
// moves forward:
//
//	open --send, sendError--> sent --finish--> done
//	open --finish--> done
//
// send and sendError are the only ways out of open (the headers go to the
// client); finish, when the response is complete, the only way into done.
type hookState uint8

const (
	// hookOpen: nothing was sent. Hooks may change the status and the
	// response headers, and start or change r.session.
	hookOpen hookState = iota
	// hookSent: the status line and headers went out (a hook's first
	// write, a hook ending the request with a status, an error page); a
	// content hook may go on writing the body.
	hookSent
	// hookDone: the response is complete (the log phase). Headers are a
	// copy, writes and set_path fail, r.session is read-only.
	hookDone
)

// hookResponse is the response side of a hook request: the client's
// writer and the one state the hook API, the session life cycle and the
// request path read (hooks.go, request.go, session.go). It is used by one
// goroutine at a time.
type hookResponse struct {
	w       http.ResponseWriter // the client's writer; nil once done
	state   hookState
	status  int         // the status a hook set (r.status), then the one sent
	written int64       // body bytes hooks wrote
	copied  http.Header // done: the headers as sent, for headers_out in the log phase
}

// open reports whether nothing was sent yet.
func (p *hookResponse) open() bool { return p.state == hookOpen }

// done reports whether the response is complete (the log phase).
func (p *hookResponse) done() bool { return p.state == hookDone }

// header returns the response headers: the live ones until done, then the
// copy (changes no longer reach the client).
func (p *hookResponse) header() http.Header {
	if p.state == hookDone {
		return p.copied
	}
	return p.w.Header()
}

// send moves open to sent: it writes the status line and headers with
// code.
func (p *hookResponse) send(code int) {
	if p.state != hookOpen {
		return
	}
	p.state, p.status = hookSent, code
	p.w.WriteHeader(code)
}

// sendError moves open to sent with a short error page (msg is a fixed,
// client-safe sentence).
func (p *hookResponse) sendError(code int, msg string) {
	if p.state != hookOpen {
		return
	}
	p.state, p.status = hookSent, code
	httpError(p.w, code, msg)
}

// finish moves to done: the response went out with status. The headers
// are kept as a copy and the writer let go.
func (p *hookResponse) finish(status int) {
	p.copied = p.w.Header().Clone()
	p.state, p.status, p.w = hookDone, status, nil
}
