//go:build cgo && !nomruby

package mruby

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

// listClasses is a hook writing the names of every class reachable
// through constants from Object, space-separated.
const listClasses = `seen = {}
q = [Object]
out = []
until q.empty?
  m = q.shift
  next if seen[m]
  seen[m] = true
  out << m.name if m.is_a?(Class) && m.name
  cs = begin
    m.constants
  rescue Exception
    []
  end
  cs.each do |c|
    v = (m.const_get(c) rescue nil)
    q << v if v.is_a?(Module)
  end
end
r.write(out.sort.join(" "))`

// allocateCLASS lists how CLASS can be allocated (by Class#allocate, by
// Class#new bound to it, by allocate on a subclass): "refused" when every
// way raised TypeError, else the names of the methods of what it got.
const allocateCLASS = `objs = []
refused = 0
[->{ CLASS.allocate },
 ->{ Class.instance_method(:allocate).bind(CLASS).call },
 ->{ Class.instance_method(:new).bind(CLASS).call },
 ->{ Class.new(CLASS).allocate }].each do |make|
  begin
    objs << make.call
  rescue TypeError
    refused += 1
  rescue Exception
  end
end
skip = [:instance_eval, :instance_exec, :loop, :raise, :fail, :__send__, :send, :public_send,
        :method_missing, :catch, :throw, :exit, :r]
if refused == 4
  r.write("refused")
else
  r.write(objs.map { |o| (o.methods rescue []) - skip }.flatten.uniq.join(" "))
end`

// pokeCLASS allocates CLASS the same ways and calls the methods METHODS of
// each object with a few argument lists.
const pokeCLASS = `objs = []
[->{ CLASS.allocate },
 ->{ Class.instance_method(:allocate).bind(CLASS).call },
 ->{ Class.instance_method(:new).bind(CLASS).call },
 ->{ Class.new(CLASS).allocate }].each do |make|
  begin
    objs << make.call
  rescue Exception
  end
end
objs.each do |o|
  %i(METHODS).each do |m|
    [[], [1], ["a"], [1, 2], [o]].each do |a|
      begin
        o.__send__(m, *a) { |*x| nil }
      rescue Exception
      end
    end
  end
end
r.write("poked")`

// mustRefuse are the classes whose allocate yields an object with
// uninitialised C state in mruby 3.1 (patch 0001), a fake nil or false
// (hostd's VM setup), or an immediate (mruby refuses those itself).
var mustRefuse = []string{"Proc", "Method", "UnboundMethod", "Struct", "Rational", "NilClass", "FalseClass", "TrueClass", "Integer", "Float", "Symbol"}

// TestAllocateEveryClass allocates every class reachable from Object in
// every way a hook can and calls every method of the result, in a child
// process: none may crash it, and the classes of mustRefuse must refuse.
func TestAllocateEveryClass(t *testing.T) {
	c := startChild(t)
	defer c.close()
	out, err := c.run(listClasses)
	if err != nil {
		t.Fatal(err)
	}
	body, ok := strings.CutPrefix(out, `status=0 body="`)
	body, _, _ = strings.Cut(body, `"`)
	classes := strings.Fields(body)
	if !ok || len(classes) < 40 {
		t.Fatalf("class list: %s", out)
	}
	for _, name := range mustRefuse {
		if !strings.Contains(" "+body+" ", " "+name+" ") {
			t.Errorf("class list lacks %s: %s", name, body)
		}
	}
	refused := map[string]bool{}
	calls, cut := 0, 0
	for _, name := range classes {
		out, err := c.run(strings.ReplaceAll(allocateCLASS, "CLASS", name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		body, ok := strings.CutPrefix(out, `status=0 body="`)
		body, _, _ = strings.Cut(body, `"`)
		if !ok {
			t.Fatalf("%s: %s", name, out)
		}
		if body == "refused" {
			refused[name] = true
			continue
		}
		methods := strings.Fields(body)
		// In chunks, so that a method that runs into the time limit
		// (Array#* of itself ...) stops only its chunk.
		for len(methods) > 0 {
			n := min(len(methods), 8)
			src := strings.ReplaceAll(pokeCLASS, "CLASS", name)
			src = strings.ReplaceAll(src, "METHODS", strings.Join(methods[:n], " "))
			out, err := c.run(src)
			if err != nil {
				t.Fatalf("%s, methods %v: %v", name, methods[:n], err)
			}
			if !strings.Contains(out, `body="poked"`) {
				cut++
			}
			calls += n
			methods = methods[n:]
		}
	}
	var names []string
	for name, r := range refused {
		if r {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	t.Logf("%d classes, %d methods called; chunks cut short by a limit: %d; refused: %s",
		len(classes), calls, cut, strings.Join(names, " "))
	for _, name := range mustRefuse {
		if !refused[name] {
			t.Errorf("%s: allocate was not refused", name)
		}
	}
}

// crashLines are the one-liners that crashed mruby 3.1 (issue 13) and
// variations; each must end in an exception.
var crashLines = []struct{ src, err string }{
	{`Proc.allocate.call`, "allocator undefined for Proc"},
	{`UnboundMethod.allocate.bind(1).call`, "allocator undefined for UnboundMethod"},
	{`Method.allocate.call`, "allocator undefined for Method"},
	{`Class.instance_method(:allocate).bind(Proc).call.call`, "allocator undefined for Proc"},
	{`Class.instance_method(:new).bind(Proc).call.call`, "allocator undefined for Proc"},
	{"class P < Proc; end\nP.allocate.call", "allocator undefined for P"},
	{`Proc.clone.allocate.call`, "allocator undefined for"},
	{`Struct.allocate.to_a`, "allocator undefined for Struct"},
	{`Rational.allocate.numerator`, "allocator undefined for Rational"},
}

func TestCrashLines(t *testing.T) {
	c := startChild(t)
	defer c.close()
	for _, tc := range crashLines {
		out, err := c.run(tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if !strings.Contains(out, tc.err) || !strings.Contains(out, "TypeError") {
			t.Errorf("%s: got %s, want a TypeError %q", tc.src, out, tc.err)
		}
	}
}

// TestLinearStringSearch: searches that were O(n * m) in mruby 3.1 finish
// well within the time limit (patch 0006), with the same results.
func TestLinearStringSearch(t *testing.T) {
	e := newEngine(scripting.Config{Limits: scripting.Limits{Timeout: 2 * time.Second}})
	defer e.Close()
	dir := t.TempDir()
	cases := []struct{ name, src, want string }{
		{"index", `r.write(("a" * 2_000_000).index("a" * 40_000 + "b").inspect)`, "nil"},
		{"index found", `r.write(("a" * 2_000_000 + "b").index("a" * 40_000 + "b").inspect)`, "1960000"},
		{"include?", `r.write(("a" * 2_000_000).include?("a" * 40_000 + "b").inspect)`, "false"},
		{"rindex", `r.write(("a" * 2_000_000).rindex("b" + "a" * 40_000).inspect)`, "nil"},
		{"rindex found", `r.write(("b" + "a" * 2_000_000).rindex("b" + "a" * 40_000).inspect)`, "0"},
		{"split", `r.write(("a" * 2_000_000).split("a" * 40_000 + "b").size.to_s)`, "1"},
		{"gsub", `r.write(("a" * 2_000_000).gsub("a" * 40_000 + "b", "x").size.to_s)`, "2000000"},
		{"utf-8 index", `r.write(("é" * 1_000_000).index("é" * 20_000 + "b").inspect)`, "nil"},
		{"utf-8 found", `r.write(("é" * 1_000 + "b").index("é" * 20 + "b").inspect + ("xé" * 10).rindex("é").to_s)`, "98019"},
		{"mid-character", `r.write(("é" * 3000 + "x").index("\xA9x").inspect)`, "nil"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			body, _, err := run(t, e, dir, strings.ReplaceAll(tc.name, " ", "_")+".rb", tc.src)
			if err != nil {
				t.Fatalf("%v (after %v)", err, time.Since(start))
			}
			if body != tc.want {
				t.Errorf("got %q, want %q", body, tc.want)
			}
		})
	}
}

// TestCompileTimeLimit: compiling a hook file or an eval'd string keeps
// to the time limit (patch 0007), and eval refuses huge sources.
func TestCompileTimeLimit(t *testing.T) {
	const timeout = 300 * time.Millisecond
	e := newEngine(scripting.Config{Limits: scripting.Limits{Timeout: timeout}})
	defer e.Close()
	dir := t.TempDir()
	// 30,000 method definitions: each name is looked up linearly in the
	// code generator's symbol list (about 30 s unchecked).
	var b strings.Builder
	for i := range 30000 {
		b.WriteString("def m")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(strconv.Itoa(i))
		b.WriteString("; end\n")
	}
	defs := b.String()

	start := time.Now()
	_, _, err := run(t, e, dir, "defs.rb", defs)
	if !errors.Is(err, scripting.ErrTimeout) || !strings.Contains(err.Error(), "compiling") {
		t.Errorf("hook file: err = %v, want a compile timeout", err)
	}
	if d := time.Since(start); d > timeout+2*time.Second {
		t.Errorf("hook file: compile stopped after %v (limit %v)", d, timeout)
	}

	// The same through eval (227 KB, under the eval limit of 256 KiB).
	src := "s = (1..16_000).map { |i| \"def a#{i};end\" }.join(\";\")\nbegin\n  eval(s)\nrescue ScriptError, StandardError\nend\nr.write(\"survived\")"
	start = time.Now()
	body, _, err := run(t, e, dir, "eval.rb", src)
	if !errors.Is(err, scripting.ErrTimeout) {
		t.Errorf("eval: body %q, err = %v, want a timeout", body, err)
	}
	if d := time.Since(start); d > timeout+2*time.Second {
		t.Errorf("eval: stopped after %v (limit %v)", d, timeout)
	}

	// Over the eval limit: an ArgumentError, at once.
	for _, m := range []string{`eval(s)`, `instance_eval(s)`, `Object.class_eval(s)`, `Object.module_eval(s)`, `Kernel.eval(s)`} {
		body, _, err := run(t, e, dir, "big.rb", "s = \"1;\" * 200_000\nbegin\n  "+m+"\nrescue ArgumentError => e\n  r.write(e.message)\nend")
		if err != nil || !strings.Contains(body, "larger than 262144 bytes") {
			t.Errorf("%s: body %q, err %v", m, body, err)
		}
	}
	// A small eval still works.
	body, _, err = run(t, e, dir, "small.rb", `r.write(eval("1 + 2").to_s, instance_eval("3").to_s, Object.class_eval("4").to_s)`)
	if err != nil || body != "334" {
		t.Errorf("small eval: body %q, err %v", body, err)
	}
}

// TestPerRunState: a run's PRNG seed and collector settings do not reach
// the next run, on one engine (one VM) and across two tenants sharing a
// pool of one VM.
func TestPerRunState(t *testing.T) {
	first := `Random.srand(42)
Random::DEFAULT.srand(42) rescue nil
srand(42)
begin; GC.disable; rescue NoMethodError; end
begin; GC.generational_mode = true; rescue NoMethodError; end
begin; GC.interval_ratio = 1; rescue NoMethodError; end
begin; GC.step_ratio = 1; rescue NoMethodError; end
GC.start`
	// The first numbers after srand(42), seen from a fresh VM.
	ref := `Random.srand(42)
a = [rand, Random.rand, Random::DEFAULT.rand]
r.write(a.inspect)`
	second := `a = [rand, Random.rand, Random::DEFAULT.rand]
r.write(a.inspect, "|", [GC.respond_to?(:disable), GC.respond_to?(:generational_mode=),
  GC.respond_to?(:interval_ratio=), GC.respond_to?(:step_ratio=)].inspect)`
	check := func(t *testing.T, runFirst, runSecond func(src string) string) {
		seeded := runSecond(ref)
		runFirst(first)
		got := runSecond(second)
		vals, gc, _ := strings.Cut(got, "|")
		if vals == seeded {
			t.Errorf("the second run's random numbers are those after srand(42): %s", got)
		}
		if gc != "[false, false, false, false]" {
			t.Errorf("collector settings reachable: %s", gc)
		}
	}
	t.Run("one engine", func(t *testing.T) {
		e := newEngine(scripting.Config{MaxVMs: 1})
		defer e.Close()
		dir := t.TempDir()
		n := 0
		runOne := func(src string) string {
			n++
			body, _, err := run(t, e, dir, "h"+strconv.Itoa(n)+".rb", src)
			if err != nil {
				t.Fatal(err)
			}
			return body
		}
		check(t, runOne, runOne)
	})
	t.Run("two tenants", func(t *testing.T) {
		pool := NewPool(1)
		defer pool.Close()
		carol := pool.Engine(scripting.Config{FS: scriptingtest.RootFS()})
		dave := pool.Engine(scripting.Config{FS: scriptingtest.RootFS()})
		cdir, ddir := t.TempDir(), t.TempDir()
		n := 0
		on := func(e *Engine, dir string) func(string) string {
			return func(src string) string {
				n++
				body, _, err := run(t, e, dir, "h"+strconv.Itoa(n)+".rb", src)
				if err != nil {
					t.Fatal(err)
				}
				return body
			}
		}
		check(t, on(carol, cdir), on(dave, ddir))
	})
}

// TestTimeLimitBetweenLongCalls: a loop of C calls that each take a while
// (a search over 2 MB) stops soon after the deadline: the hook reads the
// coarse clock before every instruction that calls a method, not only
// every 1024 instructions (about 3 s of these calls).
func TestTimeLimitBetweenLongCalls(t *testing.T) {
	const timeout = 300 * time.Millisecond
	e := newEngine(scripting.Config{Limits: scripting.Limits{Timeout: timeout}})
	defer e.Close()
	dir := t.TempDir()
	for name, src := range map[string]string{
		"index.rb":  "s = \"a\" * 2_000_000\nn = \"a\" * 40_000 + \"b\"\nloop { s.index(n) }",
		"rindex.rb": "s = \"a\" * 2_000_000\nn = \"b\" + \"a\" * 40_000\nloop { s.rindex(n) }",
		"idx.rb":    "s = \"a\" * 2_000_000\nn = \"a\" * 40_000 + \"b\"\nloop { s[n] }",
	} {
		start := time.Now()
		_, _, err := run(t, e, dir, name, src)
		took := time.Since(start)
		if !errors.Is(err, scripting.ErrTimeout) {
			t.Errorf("%s: err = %v, want a timeout", name, err)
		}
		if took > timeout+700*time.Millisecond {
			t.Errorf("%s: stopped after %v (limit %v)", name, took, timeout)
		}
	}
}

// TestMemoryLimitEverywhere: hooks that run into the memory limit while
// making closures, fibers, blocks, hashes and strings (so that allocations
// fail inside the VM's own bookkeeping: env unsharing, stack growth, fiber
// set-up) end with an error (ErrMemory, the time limit, or mruby's irep
// reference limit), never a crash, many times over on one child.
func TestMemoryLimitEverywhere(t *testing.T) {
	c := startChild(t)
	defer c.close()
	hooks := []string{
		"a = []\nloop { x = [1] * 64; a << -> { x } }",
		"def m(n); x = \"s\" * n; -> { x }; end\na = []\ni = 0\nloop { a << m(i % 5000); i += 1 }",
		"a = []\nloop { f = Fiber.new { |x| Fiber.yield(x) }; f.resume(1); a << f }",
		"a = []\nloop { a << [1, 2, 3].map { |x| y = x; -> { y } } }",
		"h = {}\ni = 0\nloop { h[i.to_s * 3] = -> { i }; i += 1 }",
		"def r(n); n > 0 ? [r(n - 1)] : []; end\na = []\nloop { a << r(50) }",
		"s = \"x\"\nloop { s = s + s + \"y\" }",
		"a = []\nloop { begin; raise \"x\" * 1000; rescue => e; a << e; end }",
	}
	for round := range 3 {
		for _, src := range hooks {
			out, err := c.run(src)
			if err != nil {
				t.Fatalf("round %d, %q: %v", round, src, err)
			}
			// Mostly the memory limit; a closure loop may first meet
			// mruby's irep reference limit (RuntimeError).
			if !strings.Contains(out, " err=") {
				t.Errorf("%q: %s, want an error", src, out)
			}
		}
	}
}
