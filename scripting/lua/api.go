package lua

import (
	glua "github.com/yuin/gopher-lua"
)

// hostdAPI adds the pure functions of the hook API to the hostd table t:
// hostd.re, URL escaping, crypto and encoding helpers, HTTP dates and the
// JSON sentinels.
func (v *vm) hostdAPI(t *glua.LTable) {
	L := v.L
	t.RawSetString("re", readOnly(L, v.reLib()))
}
