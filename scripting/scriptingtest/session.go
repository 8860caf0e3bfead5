package scriptingtest

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/hostd/hostd/host/session"
	"github.com/hostd/hostd/scripting"
)

// Session returns the request's session: from RequestOptions.Sessions
// (nil: a private memory store) with the id RequestOptions.SessionID.
// Set-Cookie goes to the response headers; it fails after the first Write.
func (r *Request) Session() (scripting.Session, error) {
	if r.sess != nil {
		return r.sess, nil
	}
	m := r.opt.Sessions
	if m == nil {
		var err error
		m, err = session.NewManager(session.Options{Store: session.NewMemory(0), Namespace: r.opt.Host})
		if err != nil {
			return nil, err
		}
	}
	r.sess = m.Start(r.opt.SessionID, func(c *http.Cookie) error {
		if r.HeadersAtWrite != nil {
			return errors.New("the response headers were already sent")
		}
		scripting.SetCookie(r.headersOut, c) // as host: other cookies stay
		return nil
	})
	return r.sess, nil
}

// SessionState returns the session the hook used, or nil when it did not
// touch r.session.
func (r *Request) SessionState() *session.Session { return r.sess }

// SessionCookie returns the session id a response set in h, or "".
func SessionCookie(h http.Header) string {
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == session.DefaultCookie {
			return c.Value
		}
	}
	return ""
}

// SessionRunner returns a function that writes src as the hook name in a
// temporary directory, runs it on e in the content phase for a request
// with session id id from mgr, and saves the session after a successful
// run, as host does.
func SessionRunner(t testing.TB, e scripting.Engine, mgr *session.Manager, name string) func(id, src string) (*Request, error) {
	dir := t.TempDir()
	return func(id, src string) (*Request, error) {
		t.Helper()
		p := WriteHook(t, filepath.Join(dir, name), src)
		req := NewRequest(RequestOptions{Sessions: mgr, SessionID: id})
		_, err := e.Run(context.Background(), scripting.PhaseContent, p, req)
		if s := req.SessionState(); s != nil && err == nil {
			if serr := s.Save(context.Background()); serr != nil {
				t.Fatal(serr)
			}
		}
		return req, err
	}
}
