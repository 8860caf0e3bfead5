//go:build cgo && !nomruby

package mruby

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

// TestRequireRelative: a module of the hook directory is loaded into the
// run's top-level class (its methods and constants are the hook's), once
// per run, nothing of it outlives the run, names leaving the hook
// directory are refused, and a module's loop is stopped by the run's own
// deadline (a require does not restart the clock).
func TestRequireRelative(t *testing.T) {
	dir := t.TempDir()
	writeHook(t, dir, "lib/util.rb", "GREETING = \"hi\"\ndef helper(x) \"<\" + x + \">\" end\nmodule Util\n  def self.twice(s) s * 2 end\nend\n")
	writeHook(t, dir, "lib/spin.rb", "while true do end\n")
	writeHook(t, dir, "lib/broken.rb", "def x(\n")
	pool := NewPool(1)
	defer pool.Close()
	e := pool.Engine(scripting.Config{HookDir: dir, FS: scriptingtest.DirFS(t, dir), Limits: scripting.Limits{Timeout: 300 * time.Millisecond}})
	defer e.Close()
	for i := range 2 {
		body, _, err := run(t, e, dir, "hook.rb", `a = require_relative "lib/util"
b = require_relative "./lib/util.rb"
r.write(helper(GREETING), " ", Util.twice("ab"), " ", a, " ", b)`)
		if err != nil || body != "<hi> abab true false" {
			t.Fatalf("run %d: %q %v", i+1, body, err)
		}
	}
	body, _, err := run(t, e, dir, "other.rb", `r.write(respond_to?(:helper, true), " ", self.class.const_defined?(:GREETING), " ", Object.const_defined?(:Util))`)
	if err != nil || body != "false false false" {
		t.Errorf("a later run sees the module: %q %v", body, err)
	}
	for _, name := range []string{"../x", "/etc/passwd", "lib/../../x", "missing"} {
		_, _, err := run(t, e, dir, "bad.rb", `require_relative "`+name+`"`)
		if err == nil || !(strings.Contains(err.Error(), "invalid name") || strings.Contains(err.Error(), "not found")) {
			t.Errorf("require_relative %q: %v", name, err)
		}
	}
	_, _, err = run(t, e, dir, "broken.rb", "x = 1\nrequire_relative 'lib/broken'")
	if err == nil || !strings.Contains(err.Error(), "broken.rb:2") {
		t.Errorf("broken module: %v", err)
	}
	start := time.Now()
	_, _, err = run(t, e, dir, "spin.rb", "t = Hostd.time\nwhile Hostd.time < t + 0.2 do end\nrequire_relative 'lib/spin'")
	if !errors.Is(err, scripting.ErrTimeout) {
		t.Errorf("a module's endless loop: %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 600*time.Millisecond {
		t.Errorf("the run took %v with a 300ms limit: the require restarted the clock", d)
	}
}
