package scriptingtest

import (
	"errors"
	"net/http"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/session"
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
		r.headersOut.Del("Set-Cookie")
		r.headersOut.Add("Set-Cookie", c.String())
		return nil
	})
	return r.sess, nil
}

// SessionState returns the session the hook used, or nil when it did not
// touch r.session.
func (r *Request) SessionState() *session.Session { return r.sess }
