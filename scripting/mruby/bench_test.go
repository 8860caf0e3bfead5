//go:build cgo && !nomruby

package mruby

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hostd/hostd/sandbox/sandboxtest"
	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

// BenchmarkHelloMruby runs examples/hooks/ruby/hello.rb in-process on the
// fake request (compare with scripting/lua's BenchmarkHelloLua).
func BenchmarkHelloMruby(b *testing.B) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	scriptingtest.BenchmarkRun(b, e, example(b, "hello.rb"), "Hello, world!\n")
}

// BenchmarkHelloMrubyParallel runs hello.rb from GOMAXPROCS goroutines.
func BenchmarkHelloMrubyParallel(b *testing.B) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	path := example(b, "hello.rb")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := scriptingtest.NewRequest(scriptingtest.RequestOptions{})
		for pb.Next() {
			req.Reset()
			if _, err := e.Run(context.Background(), scripting.PhaseContent, path, req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestSoakNoLeak runs 100,000 hooks (the JSON example, which allocates
// and calls into Go a lot) and checks that the process's resident memory
// stays flat after warming up. It takes a while, so it runs only with
// HOSTD_SOAK=1.
func TestSoakNoLeak(t *testing.T) {
	if os.Getenv("HOSTD_SOAK") == "" {
		t.Skip("set HOSTD_SOAK=1 to run the 100,000-run soak test")
	}
	e := newEngine(scripting.Config{MaxVMs: 2})
	defer e.Close()
	path := example(t, "json_api.rb")
	ctx := context.Background()
	opt := scriptingtest.RequestOptions{Method: "POST", URI: "/api/sum", Body: `{"numbers":[1,2,3.5]}`}
	runN := func(n int) {
		for range n {
			req := scriptingtest.NewRequest(opt)
			if _, err := e.Run(ctx, scripting.PhaseContent, path, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	runN(20000) // warm up: pools, heaps, a VM recycle (maxRuns)
	before := rssKB(t)
	runN(50000)
	mid := rssKB(t)
	runN(50000)
	after := rssKB(t)
	t.Logf("RSS after warm-up %d KiB, +50,000 runs %d KiB, +100,000 runs %d KiB", before, mid, after)
	// A leak of even 100 bytes a run would add ~5 MiB per 50,000 runs.
	if after > before+16*1024 || after > mid+4*1024 {
		t.Errorf("RSS grew from %d to %d to %d KiB", before, mid, after)
	}
}

func rssKB(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		sandboxtest.Skipf(t, "no /proc/self/status")
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	sandboxtest.Skipf(t, "no VmRSS")
	return 0
}

// BenchmarkLoopMruby runs a hook of 100,000 loop iterations, each with a
// method call and operators: the cost of the time-limit checks per
// instruction.
func BenchmarkLoopMruby(b *testing.B) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	path := scriptingtest.WriteHook(b, b.TempDir()+"/loop.rb",
		"i = 0\ns = 0\nwhile i < 100_000\n  s += i.to_s.size\n  i += 1\nend\nr.write(s.to_s)")
	scriptingtest.BenchmarkRun(b, e, path, "488890")
}
