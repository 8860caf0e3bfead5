package sessiontest

import (
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"
)

// Kind is one kind of session of the benchmark mix.
type Kind struct {
	Bytes, Requests, Weight int
}

// Mix is the session benchmarks' workload: short (10 B, 1 request,
// 20 %), medium (150 B, 5 requests, 30 %) and long (2 KiB, 20 requests,
// 50 %) sessions.
var Mix = []Kind{{10, 1, 20}, {150, 5, 30}, {2048, 20, 50}}

// Step is one request of the schedule: session number and request index.
type Step struct{ Sess, Req int }

// Schedule interleaves 100 sessions of the Mix (by weight) at random, as
// concurrent users would, keeping each session's requests in order. It
// returns the same schedule every time; kinds[s] is session s's kind.
func Schedule() (steps []Step, kinds []Kind) {
	for _, k := range Mix {
		for range k.Weight {
			kinds = append(kinds, k)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	next := make([]int, len(kinds))
	for {
		var open []int
		for i, k := range kinds {
			if next[i] < k.Requests {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			return steps, kinds
		}
		i := open[rng.IntN(len(open))]
		steps = append(steps, Step{i, next[i]})
		next[i]++
	}
}

// Meter measures a session-mix benchmark: the latency of every request,
// and the CPU time of this process and of the store servers from its
// creation to Report.
type Meter struct {
	lat        []time.Duration
	servers    []*Server
	cpu0, srv0 time.Duration
}

// NewMeter starts measuring; servers are the store processes (none for
// an in-process store).
func NewMeter(servers []*Server) *Meter {
	return &Meter{lat: make([]time.Duration, 0, 1<<16), servers: servers, cpu0: procCPU(), srv0: serversCPU(servers)}
}

// Time runs one request and records its latency.
func (m *Meter) Time(request func()) {
	t0 := time.Now()
	request()
	m.lat = append(m.lat, time.Since(t0))
}

// Report reports mean and p90 latency per request and CPU per request of
// this process and of the store servers.
func (m *Meter) Report(b *testing.B) {
	cpu, srv := procCPU()-m.cpu0, serversCPU(m.servers)-m.srv0
	slices.Sort(m.lat)
	var sum time.Duration
	for _, d := range m.lat {
		sum += d
	}
	n := float64(len(m.lat))
	b.ReportMetric(float64(sum.Microseconds())/n, "mean-µs")
	b.ReportMetric(float64(m.lat[len(m.lat)*9/10].Nanoseconds())/1e3, "p90-µs")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/n, "cpu-µs/req")
	b.ReportMetric(float64(srv.Nanoseconds())/1e3/n, "store-cpu-µs/req")
}

// procCPU is this process's user and system CPU time.
func procCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serversCPU is the CPU time the store servers used.
func serversCPU(servers []*Server) time.Duration {
	var total time.Duration
	for _, s := range servers {
		total += s.CPU()
	}
	return total
}
