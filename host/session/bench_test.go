package session_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hostd/hostd/host/session"
	"github.com/hostd/hostd/host/session/sessiontest"
)

// BenchmarkSessionMix runs the session mix against each store, one
// request after the other: the first request of a session stores its
// payload (a new session: one save), every later one reads it and
// updates a counter (one load that also slides the expiry, one save).
// It reports mean and p90 latency per request and CPU per request of this
// process and of the store server (sessiontest.Meter).
func BenchmarkSessionMix(b *testing.B) {
	type setup func(b *testing.B) (session.Store, []*sessiontest.Server)
	setups := []struct {
		name string
		mk   setup
	}{
		{"memory", func(b *testing.B) (session.Store, []*sessiontest.Server) { return session.NewMemory(0), nil }},
		{"redis", func(b *testing.B) (session.Store, []*sessiontest.Server) {
			srv := sessiontest.Redis(b)
			st, err := session.NewRedis("redis://"+srv.Addr+"/0", 0)
			if err != nil {
				b.Fatal(err)
			}
			return st, []*sessiontest.Server{srv}
		}},
		{"memcached", func(b *testing.B) (session.Store, []*sessiontest.Server) {
			srv := sessiontest.Memcached(b)
			st, err := session.NewMemcached([]string{srv.Addr}, nil, 0)
			if err != nil {
				b.Fatal(err)
			}
			return st, []*sessiontest.Server{srv}
		}},
		{"memcached+backup", func(b *testing.B) (session.Store, []*sessiontest.Server) {
			p, bk := sessiontest.Memcached(b), sessiontest.Memcached(b)
			st, err := session.NewMemcached([]string{p.Addr}, []string{bk.Addr}, 0)
			if err != nil {
				b.Fatal(err)
			}
			return st, []*sessiontest.Server{p, bk}
		}},
	}
	steps, kinds := sessiontest.Schedule()
	for _, s := range setups {
		b.Run(s.name, func(b *testing.B) {
			st, servers := s.mk(b)
			defer st.Close()
			m, err := session.NewManager(session.Options{Store: st, Namespace: "bench.example", MaxBytes: 4096})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			payload := map[int]string{}
			for _, k := range sessiontest.Mix {
				payload[k.Bytes] = strings.Repeat("x", k.Bytes)
			}
			ids := make([]string, len(kinds))
			request := func(st sessiontest.Step) {
				k := kinds[st.Sess]
				s := m.Start(ids[st.Sess], func(c *http.Cookie) error { ids[st.Sess] = c.Value; return nil })
				if st.Req == 0 {
					if err := s.Set(ctx, "data", payload[k.Bytes]); err != nil {
						b.Fatal(err)
					}
				} else {
					v, err := s.Get(ctx, "data")
					if err != nil || v != payload[k.Bytes] {
						b.Fatalf("session %d request %d: %v %v", st.Sess, st.Req, len(fmt.Sprint(v)), err)
					}
					if err := s.Set(ctx, "n", int64(st.Req)); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Save(ctx); err != nil {
					b.Fatal(err)
				}
			}
			meter := sessiontest.NewMeter(servers)
			i := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				st := steps[i%len(steps)]
				if i%len(steps) == 0 && i > 0 {
					clear(ids) // a new round of sessions
				}
				meter.Time(func() { request(st) })
				i++
			}
			b.StopTimer()
			meter.Report(b)
		})
	}
}
