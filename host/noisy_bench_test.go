package host_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
)

// BenchmarkNoisyNeighbour is issue 15's CPU test: tenant noisy has 12
// clients on an endless Lua hook (stopped by its 1s script_timeout);
// tenant quiet serves a hook of a few milliseconds of CPU to one client.
// It reports quiet's p50 and p99 alone and under the noise, with the CPU
// gate off (tenant_cpu_share = 1) and on (the default, 0.5), in the
// sandbox modes none and thread (thread needs root). Run it with
// -benchtime=1x: each iteration is the whole scenario (about 10s).
func BenchmarkNoisyNeighbour(b *testing.B) {
	for _, mode := range []string{"none", "thread"} {
		for _, share := range []string{"1", "0.5"} {
			b.Run(fmt.Sprintf("mode=%s/tenant_cpu_share=%s", mode, share), func(b *testing.B) {
				if mode == "thread" {
					requireRoot(b)
				}
				for b.Loop() {
					idle, noisy := noisyRun(b, mode, share)
					b.ReportMetric(ms(pct(idle, 50)), "idle-p50-ms")
					b.ReportMetric(ms(pct(idle, 99)), "idle-p99-ms")
					b.ReportMetric(ms(pct(noisy, 50)), "noisy-p50-ms")
					b.ReportMetric(ms(pct(noisy, 99)), "noisy-p99-ms")
				}
			})
		}
	}
}

func noisyRun(b *testing.B, mode, share string) (idle, noisy []time.Duration) {
	vhost := func(name string, uid int) string {
		return fmt.Sprintf("server_name = %q\nroot = \"../pub\"\nuser = \"%d\"\nsandbox = %q\nrun_as_server = %v\n"+
			"[limits]\nscript_timeout = \"1s\"\nmax_concurrent = -1\nmax_concurrent_per_client = -1\n"+
			"[[hooks]]\nphase = \"content\"\nfile = \"../hooks/%s.lua\"\n", name, uid, mode, mode == "none", name)
	}
	dir := tenantDir(b)
	hosttest.Write(b, dir, hosttest.Files{
		"hostd.toml":              hosttest.MainConfig + "tenant_cpu_share = " + share + "\nmax_handshakes = -1\naccept_rate = -1\nmax_conns_per_ip = -1\n",
		"vhosts.d/noisy.toml":     vhost("noisy.example", aliceUID),
		"vhosts.d/quiet.toml":     vhost("quiet.example", bobUID),
		"pub/":                    "",
		"hooks/noisy.example.lua": "while true do end\n",
		"hooks/quiet.example.lua": "local x = 0\nfor i = 1, 100000 do x = x + i end\nr:write(tostring(x))\n",
	})
	s := hosttest.StartDir(b, dir)
	quiet := s.Client("quiet.example", false)
	measure := func(n int) []time.Duration {
		var d []time.Duration
		for range n {
			t0 := time.Now()
			if r := hosttest.Get(b, quiet, "https://quiet.example/"); r.StatusCode != 200 {
				b.Fatalf("quiet: %d", r.StatusCode)
			}
			d = append(d, time.Since(t0))
		}
		return d
	}
	measure(10) // warm up
	idle = measure(100)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := s.Client("noisy.example", false)
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get("https://noisy.example/")
				if err == nil {
					resp.Body.Close()
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond) // the noise is up
	noisy = measure(100)
	close(stop)
	wg.Wait()
	return idle, noisy
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
