package scriptingtest

import (
	"context"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"github.com/hostd/hostd/scripting"
)

// APIBench is one hook of the API benchmarks: Src (per language, keyed by
// the engine's extension) runs on a request made from Req and must write
// Want. Base is the hook every other is measured against.
type APIBench struct {
	Name string
	Req  RequestOptions
	Src  map[string]string
	Want string
}

// APIBenchLoop is how often each APIBenches hook repeats its operation
// in one run: (op - base) / APIBenchLoop is what one call adds to a
// request, with the run's own cost (and its noise) divided away.
const APIBenchLoop = 100

// APIBenches are the per-request costs of the hook API: a regex match of
// the request path (pattern from the VM's cache) and a cookie lookup
// (a parse of the Cookie header), each APIBenchLoop times, against a hook
// that loops as often reading r.path.
func APIBenches() []APIBench {
	req := RequestOptions{URI: "/users/12345/profile?tab=posts",
		Headers: map[string]string{"Cookie": "theme=dark; lang=en; sid=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA; _ga=GA1.2.1234567890.1234567890"}}
	return []APIBench{
		{Name: "base", Req: req, Want: "12345", Src: map[string]string{
			".lua": `local x for i = 1, 100 do x = r.path end r:write("12345")`,
			".rb":  `x = nil; 100.times { x = r.path }; r.write("12345")`,
		}},
		{Name: "regex_match", Req: req, Want: "12345", Src: map[string]string{
			".lua": `local m for i = 1, 100 do m = hostd.re.match(r.path, [[^/users/(\d+)/]]) end r:write(m[1])`,
			".rb":  `m = nil; 100.times { m = %r{^/users/(\d+)/}.match(r.path) }; r.write(m[1])`,
		}},
		{Name: "cookie_parse", Req: req, Want: "12345", Src: map[string]string{
			".lua": `local c for i = 1, 100 do c = r.cookies.sid end if c then r:write("12345") end`,
			".rb":  `c = nil; 100.times { c = r.cookies["sid"] }; r.write("12345") if c`,
		}},
	}
}

// RunAPIBenches runs APIBenches on e for the hooks of extension ext, as
// sub-benchmarks, and for scale the same operations APIBenchLoop times in
// plain Go (go_regex_match, go_cookie_parse), so that a busy machine's
// numbers can be read as ratios.
func RunAPIBenches(b *testing.B, e scripting.Engine, ext string) {
	dir := b.TempDir()
	b.Run("go_regex_match", func(b *testing.B) {
		re := regexp.MustCompile(`^/users/(\d+)/`)
		path := "/users/12345/profile"
		cpu0 := cpuTime()
		for b.Loop() {
			for range APIBenchLoop {
				if re.FindStringSubmatchIndex(path) == nil {
					b.Fatal("no match")
				}
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	})
	b.Run("go_cookie_parse", func(b *testing.B) {
		h := NewRequest(APIBenches()[0].Req).HeadersIn()
		cpu0 := cpuTime()
		for b.Loop() {
			for range APIBenchLoop {
				if _, ok := scripting.Cookie(h, "sid"); !ok {
					b.Fatal("no cookie")
				}
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	})
	for _, ab := range APIBenches() {
		b.Run(ab.Name, func(b *testing.B) {
			path := WriteHook(b, filepath.Join(dir, ab.Name+ext), ab.Src[ext])
			req := NewRequest(ab.Req)
			ctx := context.Background()
			b.ReportAllocs()
			// CPU time as well as wall time: on a shared, loaded machine
			// the process's CPU time per run is the steadier measure.
			cpu0 := cpuTime()
			for b.Loop() {
				req.Reset()
				if _, err := e.Run(ctx, scripting.PhaseContent, path, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			if req.Response() != ab.Want {
				b.Fatalf("body %q, want %q", req.Response(), ab.Want)
			}
		})
	}
}

// cpuTime is the process's user and system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
