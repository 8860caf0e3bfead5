//go:build cgo && !nomruby

package mruby

import (
	"fmt"
	"strings"
	"testing"
)

// failureProgram allocates in the ways libmruby's allocation failure paths
// differ: a fiber (its context, stack and call-info stack), a closure
// over a method's frame (env unshare on the way out), an enumerator's
// fiber, eval (parser and code generator, over most kinds of node and
// literal), Hash and Struct growth.
const failureProgram = `def mk(n)
  pad = "x" * n
  b = proc { pad }
  f = Fiber.new { |x| Fiber.yield(x); b }
  f.resume(1)
  e = [1, 2, 3].each
  e.next
  eval("def z(a); [a].map { |q| q * 2 }; end; z(3)")
  eval(%q{class K; X = {a: 1, "b" => [1, 2.5, :c]}; def m(*a, k: 1, &b); yield 1 rescue nil; ensure; end; end
    x = K.new.m(1, k: 2) { |v| v + 1 }; s = "str #{x} \u00e9"; y = [1, 2, 3].each_slice(2).map { |a, b| a.to_s + b.to_s }
    case x when Integer then 1 when String then 2 else 3 end; begin; raise "e"; rescue => e; e.message; end
    z = ->(a, b = 2) { a + b }; z.(1); w = 0; while w < 3; w += 1; next if w == 1; break if w == 2; end
    q = <<~H
      heredoc #{w}
    H
    v = (123456789012345678901234567890 rescue 0); $g = /re/ rescue nil; def K.sm = 1 rescue nil
  })
  h = {}
  20.times { |i| h[i] = i.to_s }
  Struct.new(:a).new(b)
end
mk(10)
r.write("done")`

// TestAllocationFailures runs failureProgram once with each of its
// allocations refused in turn (and every later one: the memory limit
// reached at that point), in a child process: each run must end with the
// memory limit error, or finish, and never crash the process. Before patch
// 0009 a refused allocation in Fiber#initialize or in the code generator
// (eval) crashed libmruby (SIGSEGV, double free, free of an uninitialised
// pointer).
func TestAllocationFailures(t *testing.T) {
	c := startChild(t)
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	const maxAllocs = 20000
	for n := 1; n <= maxAllocs; n++ {
		out, err := c.run(fmt.Sprintf("%s%d\n%s", failFromPrefix, n, failureProgram))
		if err != nil {
			c = nil
			t.Fatalf("allocation %d refused: %v", n, err)
		}
		if strings.Contains(out, `body="done"`) {
			if n < 50 {
				t.Fatalf("allocation %d refused: the program finished (%s); does the child refuse allocations?", n, out)
			}
			t.Logf("the program makes %d allocations", n-1)
			return
		}
		if !strings.Contains(out, "memory limit") {
			t.Fatalf("allocation %d refused: got %s, want the memory limit error", n, out)
		}
	}
	t.Fatalf("the program still failed with allocation %d refused", maxAllocs)
}
