//go:build cgo && !nomruby

package mruby

import (
	"testing"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

// TestExamples runs examples/hooks/ruby with the same expectations as the
// Lua examples.
func TestExamples(t *testing.T) {
	scriptingtest.RunExamples(t, func() scripting.Engine { return newEngine(scripting.Config{}) },
		"../../examples/hooks/ruby", ".rb")
}

// example returns the absolute path of examples/hooks/ruby/name.
func example(t testing.TB, name string) string {
	t.Helper()
	return scriptingtest.Example(t, "ruby", name)
}
