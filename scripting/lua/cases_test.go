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

// TestCasesSharedPool runs every case on engines of a shared Pool.
func TestCasesSharedPool(t *testing.T) {
	pool := NewPool(2)
	defer pool.Close()
	scriptingtest.Run(t, func(t *testing.T, cfg scripting.Config) scripting.Engine {
		return pool.Engine(cfg)
	}, ".lua", func(c scriptingtest.Case) string { return c.Lua })
}

// TestIsolationAcrossTenants: carol's run and dave's next run share one VM
// (a pool of one); dave sees none of what carol set or changed.
func TestIsolationAcrossTenants(t *testing.T) {
	pool := NewPool(1)
	defer pool.Close()
	scriptingtest.RunAcrossTenants(t, func(t *testing.T, cfg scripting.Config) scripting.Engine {
		return pool.Engine(cfg)
	}, ".lua", func(c scriptingtest.Case) string { return c.Lua })
}
