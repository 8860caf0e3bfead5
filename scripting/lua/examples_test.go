package lua

import (
	"path/filepath"
	"testing"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

// TestExamples runs examples/hooks/lua with the expectations every
// language shares.
func TestExamples(t *testing.T) {
	scriptingtest.RunExamples(t, func() scripting.Engine { return New(scripting.Config{}) },
		"../../examples/hooks/lua", ".lua")
}

// example returns the absolute path of examples/hooks/lua/name.
func example(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "examples", "hooks", "lua", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
