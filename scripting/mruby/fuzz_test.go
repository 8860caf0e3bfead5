//go:build cgo && !nomruby

package mruby

import (
	"os"
	"path/filepath"
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
