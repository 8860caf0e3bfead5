package lua

import (
	"testing"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

func TestCases(t *testing.T) {
	scriptingtest.Run(t, func(t *testing.T, cfg scripting.Config) scripting.Engine {
		return New(cfg)
	}, ".lua", func(c scriptingtest.Case) string { return c.Lua })
}
