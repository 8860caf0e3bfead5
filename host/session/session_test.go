package session_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostd/hostd/host/session"
	"github.com/hostd/hostd/host/session/sessiontest"
	"github.com/hostd/hostd/scripting"
)

// stores returns one of each store kind, on private servers.
func stores(t *testing.T) map[string]func(t *testing.T) session.Store {
	return map[string]func(t *testing.T) session.Store{
		"memory": func(t *testing.T) session.Store { return session.NewMemory(0) },
		"redis": func(t *testing.T) session.Store {
			srv := sessiontest.Redis(t)
			st, err := session.NewRedis("redis://"+srv.Addr+"/0", 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"memcached": func(t *testing.T) session.Store {
			a, b := sessiontest.Memcached(t), sessiontest.Memcached(t)
			st, err := session.NewMemcached([]string{a.Addr}, []string{b.Addr}, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
}

// client is a browser: it keeps the session cookie between requests.
type client struct {
	m  *session.Manager
	id string
}

// do runs fn on the client's session as one request and saves it.
func (c *client) do(t *testing.T, fn func(s *session.Session) error) error {
	t.Helper()
	s := c.m.Start(c.id, func(ck *http.Cookie) error {
		if ck.MaxAge < 0 {
			c.id = ""
		} else {
			c.id = ck.Value
		}
		return nil
	})
	if err := fn(s); err != nil {
		return err
	}
	return s.Save(context.Background())
}

func (c *client) get(t *testing.T, k string) any {
	t.Helper()
	var v any
	if err := c.do(t, func(s *session.Session) (err error) { v, err = s.Get(context.Background(), k); return }); err != nil {
		t.Fatal(err)
	}
	return v
}

func (c *client) set(t *testing.T, k string, v any) {
	t.Helper()
	if err := c.do(t, func(s *session.Session) error { return s.Set(context.Background(), k, v) }); err != nil {
		t.Fatal(err)
	}
}

func manager(t *testing.T, st session.Store, ns string, ttl time.Duration) *session.Manager {
	t.Helper()
	m, err := session.NewManager(session.Options{Store: st, Namespace: ns, TTL: ttl, MaxBytes: 256})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestStores(t *testing.T) {
	ctx := context.Background()
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := mk(t)
			// Time passes: on a fake clock for the memory store, for
			// real on Redis and memcached, whose servers keep the time.
			pass := time.Sleep
			if m, ok := st.(*session.Memory); ok {
				var mu sync.Mutex
				now := time.Now()
				session.SetClock(m, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
				pass = func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
			}
			if _, err := st.Load(ctx, "hostd:sess:x:missing", time.Minute); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("load missing: %v", err)
			}
			a := &client{m: manager(t, st, "a.test", 2*time.Second)}
			a.set(t, "user", "ann")
			a.set(t, "n", int64(3))
			if got := a.get(t, "user"); got != "ann" {
				t.Fatalf("get user = %v", got)
			}
			if got := a.get(t, "n"); got != int64(3) && got != float64(3) {
				t.Fatalf("get n = %#v", got)
			}

			// Namespacing: B's vhost never sees A's session, even with A's id.
			b := &client{m: manager(t, st, "b.test", time.Minute), id: a.id}
			if got := b.get(t, "user"); got != nil {
				t.Fatalf("vhost b loaded vhost a's session: %v", got)
			}
			if a.m.Key(a.id) == b.m.Key(a.id) || strings.Contains(a.m.Key(a.id), a.id) {
				t.Fatalf("keys not namespaced/hashed: %s", a.m.Key(a.id))
			}

			// regenerate_id: new id, data moved, old id gone.
			old := a.id
			if err := a.do(t, func(s *session.Session) error { return s.RegenerateID(ctx) }); err != nil {
				t.Fatal(err)
			}
			if a.id == old || a.get(t, "user") != "ann" {
				t.Fatalf("after regenerate: id %q (old %q), user %v", a.id, old, a.get(t, "user"))
			}
			if _, err := st.Load(ctx, a.m.Key(old), time.Minute); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("old id still stored: %v", err)
			}

			// Size limit: refused, session unchanged.
			err := a.do(t, func(s *session.Session) error { return s.Set(ctx, "big", strings.Repeat("x", 300)) })
			if !errors.Is(err, scripting.ErrSessionTooLarge) || a.get(t, "big") != nil || a.get(t, "user") != "ann" {
				t.Fatalf("size limit: %v", err)
			}

			// Sliding expiry: used every 1.1 s, a 2 s session outlives its
			// TTL ...
			for range 2 {
				pass(1100 * time.Millisecond)
				if a.get(t, "user") != "ann" {
					t.Fatal("session expired while in use")
				}
			}
			// ... and unused for longer than its TTL (memcached counts
			// whole seconds), it is gone.
			pass(3100 * time.Millisecond)
			if got := a.get(t, "user"); got != nil {
				t.Fatalf("expired session still loads: %v", got)
			}

			// destroy.
			a.set(t, "user", "bob")
			id := a.id
			if err := a.do(t, func(s *session.Session) error { return s.Destroy(ctx) }); err != nil {
				t.Fatal(err)
			}
			if a.id != "" {
				t.Fatal("destroy kept the cookie")
			}
			if _, err := st.Load(ctx, a.m.Key(id), time.Minute); !errors.Is(err, session.ErrNotFound) {
				t.Fatalf("destroyed session stored: %v", err)
			}
		})
	}
}

func TestUnknownIDNotAdopted(t *testing.T) {
	m := manager(t, session.NewMemory(0), "a.test", time.Minute)
	forged := strings.Repeat("A", 43)
	c := &client{m: m, id: forged}
	c.set(t, "user", "ann")
	if c.id == forged || c.id == "" {
		t.Fatalf("a client-chosen id became the session id: %q", c.id)
	}
	// Ids of the wrong form are ignored without a store call.
	if s := m.Start("../../etc", nil); s.ID() != "" {
		t.Fatal("malformed id accepted")
	}
}

func TestRedisDownAndRecovery(t *testing.T) {
	srv := sessiontest.Redis(t)
	st, err := session.NewRedis("redis://"+srv.Addr+"/0", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := &client{m: manager(t, st, "a.test", time.Minute)}
	c.set(t, "user", "ann")
	srv.Kill()
	start := time.Now()
	err = c.do(t, func(s *session.Session) error { _, err := s.Get(context.Background(), "user"); return err })
	if !errors.Is(err, scripting.ErrSessionUnavailable) || !strings.Contains(err.Error(), "redis "+srv.Addr) {
		t.Fatalf("store down: %v, want ErrSessionUnavailable naming the store", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("a failing store call took %v", d)
	}
	// Saving fails too, and as a whole.
	s := c.m.Start("", func(*http.Cookie) error { return nil })
	if err := s.Set(context.Background(), "k", "v"); err != nil {
		t.Fatal(err) // a new session needs no load
	}
	if err := s.Save(context.Background()); !errors.Is(err, scripting.ErrSessionUnavailable) {
		t.Fatalf("save while down: %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// Recovered by itself (the data is gone: this redis keeps none).
	c.set(t, "user", "bob")
	if got := c.get(t, "user"); got != "bob" {
		t.Fatalf("after recovery: %v", got)
	}
}

func TestMemcachedBackup(t *testing.T) {
	p, b := sessiontest.Memcached(t), sessiontest.Memcached(t)
	st, err := session.NewMemcached([]string{p.Addr}, []string{b.Addr}, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := &client{m: manager(t, st, "a.test", time.Minute)}
	c.set(t, "user", "ann")
	p.Kill()
	if got := c.get(t, "user"); got != "ann" {
		t.Fatalf("primary down: user = %v, want the backup's", got)
	}
	c.set(t, "user", "bob") // written to the backup alone
	if got := c.get(t, "user"); got != "bob" {
		t.Fatalf("primary down, after set: %v", got)
	}
	b.Kill()
	err = c.do(t, func(s *session.Session) error { _, err := s.Get(context.Background(), "user"); return err })
	if !errors.Is(err, scripting.ErrSessionUnavailable) || !strings.Contains(err.Error(), "memcached "+p.Addr) {
		t.Fatalf("both down: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	c.set(t, "user", "cy")
	if got := c.get(t, "user"); got != "cy" {
		t.Fatalf("after recovery: %v", got)
	}
}
