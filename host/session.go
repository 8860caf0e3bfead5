package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/hostd/hostd/host/session"
	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/tenant"
)

// The session life cycle of a hook request (r.session):
//
//   - The session is made on first use of r.session and loads from the
//     store then (one round trip, which also slides its expiry).
//   - A new or regenerated id is decided at once and its Set-Cookie added
//     to the response headers, so using r.session after the first r:write
//     of a new session is an error.
//   - A changed session is saved once, just before the response headers
//     are sent (first r:write, a hook's status, or the static/CGI
//     handler), so a store failure can still answer 503; changes made
//     after that (a content hook writing first) are saved at the end of
//     the request, where a failure is only logged.
//   - A hook that fails drops its session changes: nothing is saved.

// newSessions builds a vhost's session manager from its [sessions] table.
// Clients connect lazily: an unreachable store fails requests, not start-up.
// A memory store belongs to the server, so a reload keeps its sessions.
func newSessions(s *Server, vc *tenant.VHost) (*session.Manager, error) {
	sc := vc.Sessions
	var st session.Store
	var err error
	switch sc.Store {
	case tenant.StoreRedis:
		var u string
		if u, err = redisURL(sc); err == nil { // guard.go
			st, err = session.NewRedis(u, 0)
		}
	case tenant.StoreMemcached:
		var mc *session.Memcached
		if mc, err = session.NewMemcached(sc.Servers, sc.Backup, 0); err == nil {
			st, err = mc, memcachedAuth(mc, sc) // guard.go
		}
	default:
		st = s.sessMem.get(vc.ServerName)
	}
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	return session.NewManager(session.Options{
		Store: st, Namespace: vc.ServerName, Cookie: sc.Cookie,
		TTL: sc.TTL.Std(), MaxBytes: int(sc.MaxBytes),
		Keys: s.guard.sessRing, Logger: s.logger.With("vhost", vc.ServerName),
		OnSealBroken: func() { s.guard.sealBroken.Add(1) },
	})
}

// memoryStores are the server's memory session stores by vhost name. The
// zero value is ready; it is safe for concurrent use.
type memoryStores struct {
	mu sync.Mutex
	m  map[string]*session.Memory
}

func (ms *memoryStores) get(vhost string) *session.Memory {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.m == nil {
		ms.m = make(map[string]*session.Memory)
	}
	st, ok := ms.m[vhost]
	if !ok {
		st = session.NewMemory(0)
		ms.m[vhost] = st
	}
	return st
}

// Session returns the request's session, made on first use.
func (h *hookRequest) Session() (scripting.Session, error) {
	m := h.v.sessions
	if m == nil {
		return nil, scripting.ErrNoSession
	}
	if h.sess == nil {
		h.sess = m.Start(m.IDFromRequest(h.r), h.setSessionCookie)
	}
	if h.resp.done() {
		return readOnlySession{h.sess}, nil
	}
	return h.sess, nil
}

// setSessionCookie adds the session cookie to the response headers,
// replacing one set earlier in the request.
func (h *hookRequest) setSessionCookie(c *http.Cookie) error {
	if !h.resp.open() {
		return errors.New("the response headers were already sent: use r.session before the first write")
	}
	h.sessCookie = c.String()
	hdr := h.resp.header()
	removeCookie(hdr, c.Name)
	hdr.Add("Set-Cookie", h.sessCookie)
	return nil
}

// keepSessionCookie puts the session's Set-Cookie back when a hook
// replaced the response's Set-Cookie headers (r.headers_out["Set-Cookie"]
// = ...) after using r.session: the session cookie and the hook's own
// cookies go out together, whichever came first. It runs after every hook
// and before the response headers are sent.
func (h *hookRequest) keepSessionCookie() {
	if h.sessCookie == "" || !h.resp.open() {
		return
	}
	hdr := h.resp.header()
	for _, v := range hdr.Values("Set-Cookie") {
		if v == h.sessCookie {
			return
		}
	}
	removeCookie(hdr, h.v.sessions.CookieName())
	hdr.Add("Set-Cookie", h.sessCookie)
}

// removeCookie deletes the Set-Cookie headers of the cookie name.
func removeCookie(hdr http.Header, name string) {
	scripting.RemoveSetCookie(hdr, name)
}

// dropSession forgets the request's session changes and, while the
// headers are not sent, the cookie of an id that was never stored.
func (h *hookRequest) dropSession() {
	if h.sess == nil {
		return
	}
	if h.resp.open() {
		removeCookie(h.resp.header(), h.v.sessions.CookieName())
	}
	h.sess, h.sessCookie = nil, ""
}

// saveSession writes the session back when it changed. It is not
// cancelled with the client's connection (the store call has its own
// timeout): a session a hook changed is saved even if the client left.
func (h *hookRequest) saveSession() error {
	if h.sess == nil || !h.sess.Dirty() {
		return nil
	}
	return h.sess.Save(context.WithoutCancel(h.r.Context()))
}

// flushSession saves the session before the response headers go out and
// answers 503 when it cannot; it reports whether the request may go on.
func (v *vhost) flushSession(hr *hookRequest) bool {
	err := hr.saveSession()
	if err == nil {
		return true
	}
	hr.Logger().Error("session not saved", "store", v.sessions.Store().String(), "err", err)
	v.ops.sessionErrors.Add(1)
	hr.dropSession()
	hr.resp.sendError(http.StatusServiceUnavailable, "the session store is unavailable, try again") // unless something was sent
	return false
}

// endSession saves what hooks changed after the headers were sent; a
// failure can no longer change the response and is logged.
func (v *vhost) endSession(hr *hookRequest) {
	v.flushSession(hr) // saves nothing when the session is unchanged
}

// readOnlySession is r.session in the log phase: the response is gone, so
// it can be read but not changed.
type readOnlySession struct{ s *session.Session }

var errSessionLogPhase = fmt.Errorf("the response was already sent (log phase): %w", scripting.ErrNoSession)

func (r readOnlySession) Get(ctx context.Context, k string) (any, error) { return r.s.Get(ctx, k) }
func (readOnlySession) Set(context.Context, string, any) error           { return errSessionLogPhase }
func (readOnlySession) Delete(context.Context, string) error             { return errSessionLogPhase }
func (readOnlySession) Destroy(context.Context) error                    { return errSessionLogPhase }
func (readOnlySession) RegenerateID(context.Context) error               { return errSessionLogPhase }
