package engines

import (
	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/lua"
	"github.com/hostd/hostd/scripting/mruby"
)

// Builtin returns the hook languages of this build: Lua, and mruby (whose
// engines fail with a clear error under the nomruby tag).
func Builtin() scripting.Engines {
	return scripting.Engines{lua.Language(), mruby.Language()}
}
