package lua

import (
	"testing"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

// TestExamples runs examples/hooks/lua with the expectations every
// language shares.
func TestExamples(t *testing.T) {
	scriptingtest.RunExamples(t, func() scripting.Engine { return newEngine(scripting.Config{}) },
		"../../examples/hooks/lua", ".lua")
}

// example returns the absolute path of examples/hooks/lua/name.
func example(t testing.TB, name string) string {
	t.Helper()
	return scriptingtest.Example(t, "lua", name)
}
