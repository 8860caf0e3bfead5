package session_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/host/session"
)

func keyedManager(t *testing.T, st session.Store, ns string, keys *session.Keyring, broken *int) *session.Manager {
	t.Helper()
	m, err := session.NewManager(session.Options{Store: st, Namespace: ns, TTL: time.Minute, MaxBytes: 256,
		Keys: keys, OnSealBroken: func() { *broken++ }})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSealed: what a store holds is ciphertext under a key that names no
// vhost; a value changed, forged or copied from another vhost or id is a
// fresh empty session (and counted); a rotation keeps sessions.
func TestSealed(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemory(0)
	s1, s2 := [32]byte{1}, [32]byte{2}
	keys := session.NewKeyring(s1)
	var broken int
	dave := &client{m: keyedManager(t, st, "dave.test", keys, &broken)}
	carol := &client{m: keyedManager(t, st, "carol.test", keys, &broken)}
	dave.set(t, "role", "user-of-dave")
	carol.set(t, "role", "carol")

	key := dave.m.Key(dave.id)
	if strings.Contains(key, "dave") || strings.Contains(key, dave.id) || !strings.HasPrefix(key, "hostd:sess:") {
		t.Fatalf("store key %q names the vhost or the id", key)
	}
	raw, err := st.Load(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("role")) || bytes.Contains(raw, []byte("user-of-dave")) {
		t.Fatalf("stored value is readable: %q", raw)
	}

	// Copy carol's sealed value over dave's key: it was sealed for
	// another vhost and id, so dave's session is fresh and empty.
	craw, _ := st.Load(ctx, carol.m.Key(carol.id), time.Minute)
	st.Save(ctx, key, craw, time.Minute)
	if v := dave.get(t, "role"); v != nil || broken != 1 {
		t.Fatalf("copied value accepted: role=%v broken=%d", v, broken)
	}
	// One bit flipped, or plain JSON written by someone with store access.
	dave.id = ""
	dave.set(t, "role", "user")
	key = dave.m.Key(dave.id)
	raw, _ = st.Load(ctx, key, time.Minute)
	raw[len(raw)-1] ^= 1
	st.Save(ctx, key, raw, time.Minute)
	id := dave.id
	if v := dave.get(t, "role"); v != nil || broken != 2 {
		t.Fatalf("tampered value accepted: role=%v broken=%d", v, broken)
	}
	st.Save(ctx, key, []byte(`{"role":"admin"}`), time.Minute)
	dave.id = id
	if v := dave.get(t, "role"); v != nil || broken != 3 {
		t.Fatalf("forged value accepted: role=%v broken=%d", v, broken)
	}

	// Rotation: a new secret seals, the previous one still opens, and a
	// session found under it moves to the new key.
	dave.id = ""
	dave.set(t, "role", "user")
	oldKey := dave.m.Key(dave.id)
	keys.Set([][32]byte{s2, s1})
	newKey := dave.m.Key(dave.id)
	if oldKey == newKey {
		t.Fatal("store key did not change with the secret")
	}
	if v := dave.get(t, "role"); v != "user" {
		t.Fatalf("after rotation: role=%v", v)
	}
	if _, err := st.Load(ctx, newKey, time.Minute); err != nil {
		t.Fatalf("session not moved to the new key: %v", err)
	}
	if _, err := st.Load(ctx, oldKey, time.Minute); err == nil {
		t.Fatal("old key left behind")
	}
	// Once the old secret is dropped, what it sealed is gone.
	keys.Set([][32]byte{{3}})
	if v := dave.get(t, "role"); v != nil {
		t.Fatalf("session outlived its secret: %v", v)
	}
	if broken != 3 {
		t.Fatalf("broken = %d", broken)
	}
}

// BenchmarkSealedSession is one sealed save and one sealed load of a
// 2 KiB session in the memory store: what sealing adds to every request
// that uses a session is the difference to an unsealed store call.
func BenchmarkSealedSession(b *testing.B) {
	st := session.NewMemory(0)
	m, err := session.NewManager(session.Options{Store: st, Namespace: "bench.example", MaxBytes: 8192})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	val := strings.Repeat("x", 2048)
	var id string
	b.ReportAllocs()
	for b.Loop() {
		s := m.Start(id, func(c *http.Cookie) error { id = c.Value; return nil })
		if _, err := s.Get(ctx, "v"); err != nil {
			b.Fatal(err)
		}
		if err := s.Set(ctx, "n", len(id)); err != nil {
			b.Fatal(err)
		}
		s.Set(ctx, "v", val)
		if err := s.Save(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
