package lua

import (
	glua "github.com/yuin/gopher-lua"
)

// sharedOps are the shared dictionary methods of issue 16 part B; the
// first argument of each is hostd.shared itself.
func (v *vm) sharedOps() map[string]glua.LGFunction {
	return map[string]glua.LGFunction{
		"add": v.sAdd, "replace": v.sReplace, "ttl": v.sTTL, "expire": v.sExpire,
		"get_keys": v.sGetKeys, "cas": v.sCAS, "set_if": v.sCAS,
	}
}

// dictArg returns argument n as a dictionary value when it is a string,
// number, boolean or nil (the others Hook refuses).
func dictArg(L *glua.LState, n int) any {
	switch x := L.Get(n).(type) {
	case *glua.LNilType:
		return nil
	case glua.LString:
		return string(x)
	case glua.LNumber:
		return float64(x)
	case glua.LBool:
		return bool(x)
	default:
		return x
	}
}

// sAdd is hostd.shared:add(k, v [, ttl]): store only when k is absent.
func (v *vm) sAdd(L *glua.LState) int {
	miss, err := v.api.SharedAdd(L.CheckString(2), dictArg(L, 3), float64(L.OptNumber(4, 0)))
	v.check(L, "hostd.shared:add", 1, err)
	return dictMiss(L, miss)
}

// sReplace is hostd.shared:replace(k, v [, ttl]): store only when k is
// present.
func (v *vm) sReplace(L *glua.LState) int {
	miss, err := v.api.SharedReplace(L.CheckString(2), dictArg(L, 3), float64(L.OptNumber(4, 0)))
	v.check(L, "hostd.shared:replace", 1, err)
	return dictMiss(L, miss)
}

// sTTL is hostd.shared:ttl(k): the seconds k has left (0: no expiry), or
// nil and "not found".
func (v *vm) sTTL(L *glua.LState) int {
	secs, ok := v.api.SharedTTL(L.CheckString(2))
	if !ok {
		return fail(L, "not found")
	}
	L.Push(glua.LNumber(secs))
	return 1
}

// sExpire is hostd.shared:expire(k, ttl): a new time to live (0: none).
func (v *vm) sExpire(L *glua.LState) int {
	miss, err := v.api.SharedExpire(L.CheckString(2), float64(L.CheckNumber(3)))
	v.check(L, "hostd.shared:expire", 1, err)
	return dictMiss(L, miss)
}

// sGetKeys is hostd.shared:get_keys([max]): at most max keys (default
// 1024, 0: all), sorted.
func (v *vm) sGetKeys(L *glua.LState) int {
	v.rc.poke()
	keys, err := v.api.SharedKeys(float64(L.OptNumber(2, 1024)))
	v.check(L, "hostd.shared:get_keys", 1, err)
	t := L.CreateTable(len(keys), 0)
	for _, k := range keys {
		t.Append(glua.LString(k))
	}
	L.Push(t)
	return 1
}

// sCAS is hostd.shared:cas(k, old, new [, ttl]) (also set_if): store new
// only when the value is old (nil: absent); new = nil deletes.
func (v *vm) sCAS(L *glua.LState) int {
	miss, err := v.api.SharedCAS(L.CheckString(2), dictArg(L, 3), dictArg(L, 4), float64(L.OptNumber(5, 0)))
	v.check(L, "hostd.shared:cas", 1, err)
	return dictMiss(L, miss)
}
