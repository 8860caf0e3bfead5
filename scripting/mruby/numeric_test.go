//go:build cgo && !nomruby

package mruby

import (
	"strings"
	"testing"
)

// TestFloatShift is the runaway FuzzMrubyCalls found: Float#<< doubled
// the value once per bit of the width, so `1.0 << 2**62` ran 2**62
// iterations of C code that the time limit cannot interrupt (patch 0010).
// Each shift must answer at once, with the value the doublings gave.
func TestFloatShift(t *testing.T) {
	c := startChild(t)
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	for _, tc := range []struct{ expr, want string }{
		{"1.0 << 2**62", "Infinity"},
		{"-0.0 << 2**62", "0"},
		{"-1.0 << 1100", "-Infinity"},
		{"1.5 << 3", "12"},
		{"1.0 << 1023", "8.98846567431158e+307"},
		{"3.0 >> 1", "1"},
		{"-3.0 >> 2**62", "-1"},
		{"begin; 1 << 2**62; rescue RangeError; :RangeError; end", "RangeError"}, // Integer: no loop
	} {
		out, err := c.run("r.write((" + tc.expr + ").to_s)")
		if err != nil {
			c = nil
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if !strings.Contains(out, `body="`+tc.want+`"`) {
			t.Errorf("%s: %s, want %s", tc.expr, out, tc.want)
		}
	}
}
