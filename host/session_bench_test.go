package host_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/scripting/session/sessiontest"
)

// benchSessionHook stores n bytes on a session's first request; later
// requests load them and update a counter.
const benchSessionHook = `
local n = tonumber(r.args.n)
if r.args.first then
  r.session:set("data", string.rep("x", n))
else
  local d = r.session:get("data")
  if d == nil or #d ~= n then return 500 end
  r.session:set("c", (r.session:get("c") or 0) + 1)
end
r:write("ok")
`

// BenchmarkSessionMixHTTP is the session mix of scripting/session's
// BenchmarkSessionMix through the whole server: HTTPS (keep-alive), a Lua
// content hook, and the store. It reports mean and p90 latency per
// request and the CPU per request of the test process (client and
// server) and of the store server.
func BenchmarkSessionMixHTTP(b *testing.B) {
	type kind struct{ bytes, requests, weight int }
	mix := []kind{{10, 1, 20}, {150, 5, 30}, {2048, 20, 50}}
	var kinds []kind
	for _, k := range mix {
		for range k.weight {
			kinds = append(kinds, k)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	type step struct{ sess, req int }
	var steps []step
	next := make([]int, len(kinds))
	for {
		var open []int
		for i, k := range kinds {
			if next[i] < k.requests {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			break
		}
		i := open[rng.IntN(len(open))]
		steps = append(steps, step{i, next[i]})
		next[i]++
	}

	for _, store := range []string{"memory", "redis", "memcached"} {
		b.Run(store, func(b *testing.B) {
			var sessions string
			var servers []*sessiontest.Server
			switch store {
			case "redis":
				s := sessiontest.Redis(b)
				servers = append(servers, s)
				sessions = fmt.Sprintf("[sessions]\nstore = \"redis\"\nurl = \"redis://%s/0\"\n", s.Addr)
			case "memcached":
				s := sessiontest.Memcached(b)
				servers = append(servers, s)
				sessions = fmt.Sprintf("[sessions]\nstore = \"memcached\"\nservers = [%q]\n", s.Addr)
			}
			srv := hosttest.Start(b, hosttest.Files{
				"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../pub\"\n" + sessions + "[[hooks]]\nphase = \"content\"\nfile = \"../hooks/s.lua\"\n",
				"pub/":            "",
				"hooks/s.lua":     benchSessionHook,
			})
			c := srv.Client("a.example", false)
			cookies := make([]string, len(kinds))
			do := func(st step) {
				k := kinds[st.sess]
				url := "https://a.example/?n=" + strconv.Itoa(k.bytes)
				if st.req == 0 {
					url += "&first=1"
				}
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				if st.req > 0 {
					req.Header.Set("Cookie", cookies[st.sess])
				}
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
				for _, ck := range resp.Cookies() {
					if ck.Name == "hostd_session" {
						cookies[st.sess] = ck.Name + "=" + ck.Value
					}
				}
			}
			do(steps[0]) // warm up: VM, TLS session, store connection
			clear(cookies)
			lat := make([]time.Duration, 0, 1<<16)
			cpu0, srv0 := procCPU(), storeCPU(servers)
			i := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if i%len(steps) == 0 {
					clear(cookies)
				}
				t0 := time.Now()
				do(steps[i%len(steps)])
				lat = append(lat, time.Since(t0))
				i++
			}
			b.StopTimer()
			cpu, scpu := procCPU()-cpu0, storeCPU(servers)-srv0
			slices.Sort(lat)
			var sum time.Duration
			for _, d := range lat {
				sum += d
			}
			n := float64(len(lat))
			b.ReportMetric(float64(sum.Microseconds())/n, "mean-µs")
			b.ReportMetric(float64(lat[len(lat)*9/10].Nanoseconds())/1e3, "p90-µs")
			b.ReportMetric(float64(cpu.Nanoseconds())/1e3/n, "cpu-µs/req")
			b.ReportMetric(float64(scpu.Nanoseconds())/1e3/n, "store-cpu-µs/req")
		})
	}
}

func procCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// storeCPU is the store servers' CPU time, from /proc/PID/stat.
func storeCPU(servers []*sessiontest.Server) time.Duration {
	var total time.Duration
	for _, s := range servers {
		total += s.CPU()
	}
	return total
}
