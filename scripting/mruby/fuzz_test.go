//go:build cgo && !nomruby

package mruby

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fuzzPrelude is put before every fuzz input: the assertion helpers of
// mruby's own tests (testdata/fuzzseeds holds snippets of them) as methods
// that run the block and swallow its exceptions.
const fuzzPrelude = `def assert(*a); yield if block_given?; rescue Exception; end
def assert_raise(*a); yield; rescue Exception; end
def assert_nothing_raised(*a); yield; rescue Exception; end
def assert_equal(*a); end
def assert_not_equal(*a); end
def assert_true(*a); end
def assert_false(*a); end
def assert_nil(*a); end
def assert_kind_of(*a); end
def assert_operator(*a); end
def assert_float(*a); end
def assert_same(*a); end
def assert_predicate(*a); end
def assert_include(*a); end
def assert_raise_with_message(*a); yield; rescue Exception; end
`

// fuzzLines seed the fuzzer besides testdata/fuzzseeds: the crash
// one-liners of issue 13 and hook-shaped code.
var fuzzLines = []string{
	`Proc.allocate.call`,
	`UnboundMethod.allocate.bind(1).call`,
	`Class.instance_method(:allocate).bind(Proc).call.call`,
	`("a" * 20_000).index("a" * 4_000 + "b")`,
	`("a" * 1000).gsub("a", "b" * 1000).size`,
	`f = Fiber.new { |x| Fiber.yield(x * 2) }; f.resume(1); f.resume`,
	`[1, 2, 3].pack("C*").unpack("C*")`,
	`S = Struct.new(:a, :b); s = S.new(1, 2); s[1]; s.to_a`,
	`m = 1.method(:+); m.unbind.bind(2).call(3)`,
	`h = {}; 100.times { |i| h[i] = i }; h.each { |k, v| h.delete(k) if k.even? }`,
	`eval("1 + 1"); instance_eval("self"); Object.class_eval("1")`,
	`r.write(r.method, r.path); r.headers_out["X"] = "y"; Hostd.json_encode({"a" => [1, 2]})`,
	`begin; raise "x"; rescue => e; e.backtrace; end; catch(:t) { throw :t, 1 }`,
	`a = []; a << a; a.inspect; h = {}; h[1] = h; h.inspect`,
}

// FuzzMrubyHook runs generated and mutated hook sources (fuzzPrelude +
// input) through the real engine in a child process: a crash or a C call
// running far past the time limit fails with the input. Without -fuzz it
// runs the seeds and testdata/fuzz/FuzzMrubyHook (every crasher found so
// far) as regression tests; `make fuzz` fuzzes for a set time.
func FuzzMrubyHook(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "fuzzseeds", "*.rb"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata/fuzzseeds: %v", err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, s := range fuzzLines {
		f.Add(s)
	}
	// One child per fuzzing process, replaced when an input ends it.
	var c *child
	f.Cleanup(func() {
		if c != nil {
			c.close()
		}
	})
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 64<<10 {
			return
		}
		if c == nil {
			c = startChild(t)
		}
		if _, err := c.run(fuzzPrelude + src); err != nil {
			c = nil
			t.Fatalf("%v\ninput:\n%s", err, src)
		}
	})
}

// callsProgram is the hook FuzzMrubyCalls runs: SEED (the fuzz input's
// bytes) drives method calls, chosen by index among the receiver's
// methods, on values from a pool that the calls' results join.
const callsProgram = `vals = [0, 1, -1, 2**62, 1.5, -0.0, "str", "é" * 3, "a\x00b", :sym, [1, "a", nil], {1 => 2, "k" => [3]},
  (1..10), ("a".."e"), nil, true, false, Object.new, Proc.new { |x| x }, lambda { |a, b| a }, 1.method(:+),
  Struct.new(:a, :b).new(1, 2), Fiber.new { |x| Fiber.yield(x); 2 }, Random.new(1), Time.at(0), Rational(1, 3),
  [1, 2, 3].each, (1..3).lazy, String, Array, Hash, Class.new, Module.new, Comparable, Kernel, Object,
  Exception.new("e"), 10.times, "%d %s", [3, 1, 2], "x" * 300]
skip = [:loop, :instance_eval, :instance_exec, :class_eval, :module_eval, :eval, :exit, :r,
  :define_method, :method_missing, :__send__, :send, :public_send, :raise, :fail, :throw, :catch]
seed = SEED
i = 0
while i + 3 < seed.size
  o = vals[seed[i] % vals.size]
  ms = ((o.methods rescue []) - skip)
  if ms.size > 0
    m = ms[seed[i + 1] % ms.size]
    argc = seed[i + 2] % 4
    args = (0...argc).map { |k| vals[(seed[i + 3] + k * 7) % vals.size] }
    begin
      res = o.__send__(m, *args) { |*x| x.first }
      vals << res if vals.size < 96
    rescue Exception
    end
  end
  i += 4
end
r.write(vals.size.to_s)`

// failMark as an input's first byte makes FuzzMrubyCalls refuse
// allocations (see there).
const failMark = 0xfa

// FuzzMrubyCalls fuzzes method calls rather than syntax: the input's bytes
// pick receivers, methods (any of each receiver's) and arguments, and
// results become receivers and arguments of later calls (see
// callsProgram). Go's coverage guidance does not see libmruby's C code,
// so this structure does what coverage cannot: every input is a
// meaningful sequence of calls. Runs in a child process as FuzzMrubyHook.
func FuzzMrubyCalls(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("Proc.allocate.call; UnboundMethod.allocate.bind(1)"))
	f.Add([]byte{18, 200, 1, 3, 22, 100, 2, 5, 21, 40, 0, 0, 20, 7, 1, 9, 31, 3, 2, 11})
	f.Add([]byte{failMark, 9, 22, 100, 2, 5, 27, 3, 0, 0, 12, 40, 1, 9})
	var c *child
	f.Cleanup(func() {
		if c != nil {
			c.close()
		}
	})
	f.Fuzz(func(t *testing.T, seed []byte) {
		if len(seed) > 4096 {
			return
		}
		var b strings.Builder
		b.WriteString("SEED = [")
		for i, x := range seed {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(x)))
		}
		b.WriteString("]\n")
		src := strings.Replace(callsProgram, "seed = SEED", b.String()+"seed = SEED", 1)
		// An input starting with failMark runs with its allocations
		// refused from the one its second byte picks (the memory limit
		// reached there; the bug class of patch 0009).
		if len(seed) > 1 && seed[0] == failMark {
			src = fmt.Sprintf("%s%d\n%s", failFromPrefix, 1+4*int(seed[1]), src)
		}
		if c == nil {
			c = startChild(t)
		}
		if _, err := c.run(src); err != nil {
			c = nil
			t.Fatalf("%v\ninput: %v", err, seed)
		}
	})
}
