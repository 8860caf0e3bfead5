package session_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/scripting/session"
	"github.com/hostd/hostd/scripting/session/sessiontest"
)

// sessionKind is one kind of session of the benchmark mix.
type sessionKind struct {
	bytes, requests, weight int
}

// mix is the comparison's workload: short (10 B, 1 request, 20 %),
// medium (150 B, 5 requests, 30 %) and long (2 KiB, 20 requests, 50 %)
// sessions.
var mix = []sessionKind{{10, 1, 20}, {150, 5, 30}, {2048, 20, 50}}

// step is one request of the schedule: session number and request index.
type step struct{ sess, req int }

// schedule interleaves 100 sessions of the mix (by weight) at random, as
// concurrent users would, keeping each session's requests in order.
func schedule() ([]step, []sessionKind) {
	var kinds []sessionKind
	for _, k := range mix {
		for range k.weight {
			kinds = append(kinds, k)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	next := make([]int, len(kinds))
	var steps []step
	for {
		var open []int
		for i, k := range kinds {
			if next[i] < k.requests {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			return steps, kinds
		}
		i := open[rng.IntN(len(open))]
		steps = append(steps, step{i, next[i]})
		next[i]++
	}
}

// BenchmarkSessionMix runs the session mix against each store, one
// request after the other: the first request of a session stores its
// payload (a new session: one save), every later one reads it and
// updates a counter (one load that also slides the expiry, one save).
// It reports mean and p90 latency per request and CPU per request of this
// process and of the store server.
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
	steps, kinds := schedule()
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
			for _, k := range mix {
				payload[k.bytes] = strings.Repeat("x", k.bytes)
			}
			ids := make([]string, len(kinds))
			request := func(st step) {
				k := kinds[st.sess]
				s := m.Start(ids[st.sess], func(c *http.Cookie) error { ids[st.sess] = c.Value; return nil })
				if st.req == 0 {
					if err := s.Set(ctx, "data", payload[k.bytes]); err != nil {
						b.Fatal(err)
					}
				} else {
					v, err := s.Get(ctx, "data")
					if err != nil || v != payload[k.bytes] {
						b.Fatalf("session %d request %d: %v %v", st.sess, st.req, len(fmt.Sprint(v)), err)
					}
					if err := s.Set(ctx, "n", int64(st.req)); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Save(ctx); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, 1<<16)
			cpu0, srv0 := cpuTime(), serverCPU(servers)
			i := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				st := steps[i%len(steps)]
				if i%len(steps) == 0 && i > 0 {
					clear(ids) // a new round of sessions
				}
				t0 := time.Now()
				request(st)
				lat = append(lat, time.Since(t0))
				i++
			}
			b.StopTimer()
			cpu, srv := cpuTime()-cpu0, serverCPU(servers)-srv0
			slices.Sort(lat)
			var sum time.Duration
			for _, d := range lat {
				sum += d
			}
			n := float64(len(lat))
			b.ReportMetric(float64(sum.Microseconds())/n, "mean-µs")
			b.ReportMetric(float64(lat[len(lat)*9/10].Nanoseconds())/1e3, "p90-µs")
			b.ReportMetric(float64(cpu.Nanoseconds())/1e3/n, "cpu-µs/req")
			b.ReportMetric(float64(srv.Nanoseconds())/1e3/n, "store-cpu-µs/req")
		})
	}
}

// cpuTime is this process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is the CPU time the store servers used.
func serverCPU(servers []*sessiontest.Server) time.Duration {
	var total time.Duration
	for _, s := range servers {
		total += s.CPU()
	}
	return total
}
