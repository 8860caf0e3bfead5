package session

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hostd/hostd/scripting"
)

// Defaults of Options.
const (
	DefaultCookie   = "hostd_session"
	DefaultTTL      = 30 * time.Minute
	DefaultMaxBytes = 4096
)

// idBytes is the entropy of a session id: 256 bits.
const idBytes = 32

// Options configure a Manager. The zero value works except for Store and
// Namespace.
type Options struct {
	// Store keeps the sessions (required).
	Store Store
	// Namespace separates this vhost's sessions from every other's in
	// the store: the vhost's server name (required).
	Namespace string
	// Cookie is the cookie name (default DefaultCookie).
	Cookie string
	// TTL is the sliding expiry: a session unused this long is gone
	// (default DefaultTTL).
	TTL time.Duration
	// MaxBytes bounds the session's JSON encoding (default DefaultMaxBytes).
	MaxBytes int
	// Timeout bounds each store call (default DefaultTimeout).
	Timeout time.Duration
	// Keys are the server secrets values are sealed with (seal.go);
	// nil gives the Manager a random secret of its own, so its sessions
	// last as long as it does.
	Keys *Keyring
	// Logger receives a line for every session value that fails
	// authentication (default: discard).
	Logger *slog.Logger
	// OnSealBroken, when set, is called for every such value (a counter).
	OnSealBroken func()
}

// Manager makes the sessions of one vhost. Its options are immutable; it
// is safe for concurrent use.
type Manager struct {
	o       Options
	derived atomic.Pointer[derived] // the vhost's keys for the keyring's current secrets
}

// NewManager returns a Manager with o's defaults filled in.
func NewManager(o Options) (*Manager, error) {
	if o.Store == nil {
		return nil, errors.New("session: no store")
	}
	if o.Namespace == "" {
		return nil, errors.New("session: no namespace")
	}
	if o.Cookie == "" {
		o.Cookie = DefaultCookie
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Keys == nil || o.Keys.load() == nil {
		o.Keys = randomKeyring()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{o: o}
	if _, err := m.keys(); err != nil {
		return nil, err
	}
	return m, nil
}

// keys returns the vhost's keys for the keyring's current secrets, newest
// first, deriving them again after a rotation.
func (m *Manager) keys() ([]vhostKey, error) {
	ks := m.o.Keys.load()
	if d := m.derived.Load(); d != nil && d.src == ks {
		return d.keys, nil
	}
	d, err := deriveKeys(ks, m.o.Namespace)
	if err != nil {
		return nil, fmt.Errorf("session keys: %w", err)
	}
	m.derived.Store(d)
	return d.keys, nil
}

// Store returns the manager's store.
func (m *Manager) Store() Store { return m.o.Store }

// CookieName returns the session cookie's name.
func (m *Manager) CookieName() string { return m.o.Cookie }

// Key returns the store key of session id under the newest secret: an
// HMAC of the vhost and the id, so that an id is never used as a key
// directly, the same id names different sessions on different vhosts, and
// no one without the secret can compute or recognise a vhost's keys.
func (m *Manager) Key(id string) string {
	ks, err := m.keys()
	if err != nil {
		return ""
	}
	return ks[0].storeKey(m.o.Namespace, id)
}

// Start returns the session of a request that carried cookie id (""
// when none). It does no I/O: the session loads on first use. setCookie
// is called to add a Set-Cookie header when the id changes (a new or
// regenerated session, or a destroyed one); it fails when the response
// headers were already sent.
func (m *Manager) Start(id string, setCookie func(*http.Cookie) error) *Session {
	if !validID(id) {
		id = ""
	}
	return &Session{m: m, id: id, clientID: id, setCookie: setCookie}
}

// IDFromRequest returns the value of the session cookie of r, or "" when
// it carries none that could be an id.
func (m *Manager) IDFromRequest(r *http.Request) string {
	for _, c := range r.CookiesNamed(m.o.Cookie) {
		if validID(c.Value) {
			return c.Value
		}
	}
	return ""
}

// validID reports whether s has the form of an id this package makes.
func validID(s string) bool {
	if len(s) != base64.RawURLEncoding.EncodedLen(idBytes) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func newID() string {
	var b [idBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Session is one request's session. It implements scripting.Session. It is
// used by one goroutine at a time (the request's).
type Session struct {
	m         *Manager
	id        string // current id; "" until one is needed
	clientID  string // the id the client sent
	setCookie func(*http.Cookie) error
	loaded    bool
	data      map[string]any
	dirty     bool
	enc       []byte   // JSON of data as Set checked it; nil when unknown
	found     string   // store key the session was loaded from ("" when none)
	stale     []string // store keys to delete at Save (regenerated ids, older secrets)
}

var _ scripting.Session = (*Session)(nil)

// ID returns the session's current id ("" when it has none yet).
func (s *Session) ID() string { return s.id }

// Dirty reports whether the session changed since it was loaded or saved.
func (s *Session) Dirty() bool { return s.dirty || len(s.stale) > 0 }

// Loaded reports whether the session was used (loaded) in this request.
func (s *Session) Loaded() bool { return s.loaded }

func (s *Session) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.m.o.Timeout)
}

// load reads the session on first use. An id the store does not know
// (expired, destroyed, or never issued) is dropped, so a client cannot
// choose the id of a new session (session fixation). The store key of
// each kept secret is tried, newest first; a session found under an older
// secret is sealed again under the newest one at Save. A value that does
// not open (tampered with, or forged by someone who can write to the
// store) is logged and replaced by a fresh, empty session.
func (s *Session) load(ctx context.Context) error {
	if s.loaded {
		return nil
	}
	if s.id == "" {
		s.data, s.loaded = map[string]any{}, true
		return nil
	}
	keys, err := s.m.keys()
	if err != nil {
		return err
	}
	st, ns := s.m.o.Store, s.m.o.Namespace
	var data map[string]any
	for i := range keys {
		k := &keys[i]
		key := k.storeKey(ns, s.id)
		cctx, cancel := s.ctx(ctx)
		b, err := st.Load(cctx, key, s.m.o.TTL)
		cancel()
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return unavailable(st, "load", err)
		}
		plain, err := k.open(ns, s.id, b)
		if err != nil {
			s.m.o.Logger.Warn("session value failed authentication: starting a fresh session",
				"store", st.String(), "err", err)
			if s.m.o.OnSealBroken != nil {
				s.m.o.OnSealBroken()
			}
			break
		}
		v, derr := scripting.DecodeJSON(plain, max(len(plain), 1))
		m, ok := v.(map[string]any)
		if derr != nil || !ok {
			break // not ours or corrupt: start afresh rather than fail forever
		}
		data, s.found = m, key
		if i > 0 { // sealed with an older secret: seal it again
			s.dirty = true
		}
		break
	}
	if data == nil {
		s.id, data = "", map[string]any{}
	}
	s.data, s.loaded = data, true
	return nil
}

// Get returns the value of key, or nil.
func (s *Session) Get(ctx context.Context, key string) (any, error) {
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	return s.data[key], nil
}

// Set stores v under key; nil deletes it.
func (s *Session) Set(ctx context.Context, key string, v any) error {
	if v == nil {
		return s.Delete(ctx, key)
	}
	if err := s.load(ctx); err != nil {
		return err
	}
	next := maps.Clone(s.data)
	next[key] = v
	b, err := scripting.EncodeJSON(next, s.m.o.MaxBytes+1)
	if err != nil && !errors.Is(err, scripting.ErrJSONTooLarge) {
		return fmt.Errorf("session value %q: %w", key, err)
	}
	if err != nil || len(b) > s.m.o.MaxBytes {
		return fmt.Errorf("session would exceed its limit of %d bytes: %w", s.m.o.MaxBytes, scripting.ErrSessionTooLarge)
	}
	if err := s.ensureID(); err != nil {
		return err
	}
	s.data, s.dirty, s.enc = next, true, b
	return nil
}

// Delete removes key.
func (s *Session) Delete(ctx context.Context, key string) error {
	if err := s.load(ctx); err != nil {
		return err
	}
	if _, ok := s.data[key]; ok {
		delete(s.data, key)
		s.dirty, s.enc = true, nil
	}
	return nil
}

// storeKeys are the store keys the session's current id may be under: the
// newest secret's, and the one it was loaded from.
func (s *Session) storeKeys() []string {
	if s.id == "" {
		return nil
	}
	ks := []string{s.m.Key(s.id)}
	if s.found != "" && s.found != ks[0] {
		ks = append(ks, s.found)
	}
	return ks
}

// Destroy removes the session from the store now and expires the cookie.
func (s *Session) Destroy(ctx context.Context) error {
	st := s.m.o.Store
	for _, key := range append(s.stale, s.storeKeys()...) {
		cctx, cancel := s.ctx(ctx)
		err := st.Delete(cctx, key)
		cancel()
		if err != nil {
			return unavailable(st, "delete", err)
		}
	}
	if s.clientID != "" || s.id != "" {
		if err := s.setCookie(s.cookie("", -1)); err != nil {
			return err
		}
	}
	s.id, s.stale, s.found, s.data, s.loaded, s.dirty, s.enc = "", nil, "", map[string]any{}, true, false, nil
	return nil
}

// RegenerateID gives the session a new id; the old one is deleted from
// the store when the session is saved.
func (s *Session) RegenerateID(ctx context.Context) error {
	if err := s.load(ctx); err != nil {
		return err
	}
	old, oldKeys := s.id, s.storeKeys()
	s.id = ""
	if err := s.ensureID(); err != nil {
		s.id = old
		return err
	}
	s.stale, s.found = append(s.stale, oldKeys...), ""
	s.dirty = true
	return nil
}

// ensureID gives the session an id and sends its cookie.
func (s *Session) ensureID() error {
	if s.id != "" {
		return nil
	}
	id := newID()
	if err := s.setCookie(s.cookie(id, 0)); err != nil {
		return err
	}
	s.id = id
	return nil
}

// cookie is the session cookie: no Max-Age (the store's sliding expiry
// decides), Secure, HttpOnly, SameSite=Lax.
func (s *Session) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: s.m.o.Cookie, Value: value, Path: "/", MaxAge: maxAge,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode,
	}
}

// Save writes the session back when it changed: the whole value, sealed
// under the newest secret, in one store call (a store never holds half a
// session), then removes the keys it replaced (a regenerated id, a key
// of an older secret). An emptied session is deleted.
func (s *Session) Save(ctx context.Context) error {
	if !s.Dirty() {
		return nil
	}
	st := s.m.o.Store
	if s.dirty && s.id != "" {
		keys, err := s.m.keys()
		if err != nil {
			return err
		}
		key := keys[0].storeKey(s.m.o.Namespace, s.id)
		cctx, cancel := s.ctx(ctx)
		if len(s.data) == 0 {
			s.stale = append(s.stale, s.storeKeys()...)
		} else {
			b := s.enc
			if b == nil {
				b, err = scripting.EncodeJSON(s.data, s.m.o.MaxBytes+1)
			}
			if err == nil {
				err = st.Save(cctx, key, keys[0].seal(s.m.o.Namespace, s.id, b), s.m.o.TTL)
			}
			if err == nil && s.found != "" && s.found != key {
				s.stale = append(s.stale, s.found)
			}
		}
		cancel()
		if err != nil {
			return unavailable(st, "save", err)
		}
		if s.found = key; len(s.data) == 0 {
			s.found = ""
		}
	}
	s.dirty = false
	for len(s.stale) > 0 {
		cctx, cancel := s.ctx(ctx)
		err := st.Delete(cctx, s.stale[0])
		cancel()
		if err != nil {
			return unavailable(st, "delete", err)
		}
		s.stale = s.stale[1:]
	}
	return nil
}
