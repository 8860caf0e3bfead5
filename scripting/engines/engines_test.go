package engines_test

import (
	"errors"
	"testing"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/engines"
	"github.com/hostd/hostd/scripting/mruby"
)

func TestBuiltin(t *testing.T) {
	langs := engines.Builtin()
	if got, want := langs.Want(), "a .lua or .rb file"; got != want {
		t.Errorf("Want() = %q, want %q", got, want)
	}
	if _, err := langs.For("/hooks/a.py"); err == nil || err.Error() != "/hooks/a.py: not a hook (want a .lua or .rb file)" {
		t.Errorf("For(a.py) = %v", err)
	}
	lua, err := langs.For("/hooks/a.lua")
	if err != nil || lua.Err != nil || lua.Ext != ".lua" {
		t.Fatalf("For(a.lua) = %+v, %v", lua, err)
	}
	rb, err := langs.For("/hooks/a.rb")
	if err != nil || rb.Ext != ".rb" {
		t.Fatalf("For(a.rb) = %+v, %v", rb, err)
	}
	// Without mruby (-tags nomruby) the language is listed but says why
	// it cannot run.
	if mruby.Available != (rb.Err == nil) || rb.Err != nil && !errors.Is(rb.Err, scripting.ErrNotSupported) {
		t.Errorf("mruby.Available = %v, .rb Err = %v", mruby.Available, rb.Err)
	}
	for _, l := range langs {
		p := l.NewPool(1)
		var e scripting.Engine = p.Engine(scripting.Config{})
		if e == nil || l.New(scripting.Config{}) == nil {
			t.Errorf("%s: no engine", l.Ext)
		}
		p.Close()
	}
}
