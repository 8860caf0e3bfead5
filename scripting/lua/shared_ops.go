package lua

import (
	"errors"

	glua "github.com/yuin/gopher-lua"

	"github.com/hostd/hostd/scripting"
)

// sharedOps are the shared dictionary methods of issue 16 part B; the
// first argument of each is hostd.shared itself.
func (v *vm) sharedOps() map[string]glua.LGFunction {
	return map[string]glua.LGFunction{
		"add": v.sAdd, "replace": v.sReplace, "ttl": v.sTTL, "expire": v.sExpire,
		"get_keys": v.sGetKeys, "cas": v.sCAS, "set_if": v.sCAS,
	}
}

// dictArg returns argument n as a dictionary value: a string, number,
// boolean or nil.
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
	}
	L.ArgError(n, "value must be a string, number, boolean or nil")
	return nil
}

// dictResult pushes the result of a conditional store: true, or false and
// why not (miss), or false and why the dictionary refused it (dictFullMsg).
func dictResult(L *glua.LState, what string, ok bool, err error, miss string) int {
	switch {
	case errors.Is(err, scripting.ErrDictFull):
		L.Push(glua.LFalse)
		L.Push(glua.LString(dictFullMsg(err)))
		return 2
	case err != nil:
		L.RaiseError("hostd.shared:%s: %s", what, err.Error())
	case !ok:
		L.Push(glua.LFalse)
		L.Push(glua.LString(miss))
		return 2
	}
	L.Push(glua.LTrue)
	return 1
}

// sAdd is hostd.shared:add(k, v [, ttl]): store only when k is absent.
func (v *vm) sAdd(L *glua.LState) int {
	key := L.CheckString(2)
	val := dictArg(L, 3)
	if val == nil {
		L.ArgError(3, "value must not be nil")
	}
	ok, err := v.e.cfg.Shared.Add(key, val, ttlArg(L, 4))
	return dictResult(L, "add", ok, err, "exists")
}

// sReplace is hostd.shared:replace(k, v [, ttl]): store only when k is
// present.
func (v *vm) sReplace(L *glua.LState) int {
	key := L.CheckString(2)
	ok, err := v.e.cfg.Shared.Replace(key, dictArg(L, 3), ttlArg(L, 4))
	return dictResult(L, "replace", ok, err, "not found")
}

// sTTL is hostd.shared:ttl(k): the seconds k has left (0: no expiry), or
// nil and "not found".
func (v *vm) sTTL(L *glua.LState) int {
	ttl, ok := v.e.cfg.Shared.TTL(L.CheckString(2))
	if !ok {
		L.Push(glua.LNil)
		L.Push(glua.LString("not found"))
		return 2
	}
	L.Push(glua.LNumber(ttl.Seconds()))
	return 1
}

// sExpire is hostd.shared:expire(k, ttl): a new time to live (0: none).
func (v *vm) sExpire(L *glua.LState) int {
	key := L.CheckString(2)
	L.CheckNumber(3)
	ok := v.e.cfg.Shared.Expire(key, ttlArg(L, 3))
	return dictResult(L, "expire", ok, nil, "not found")
}

// sGetKeys is hostd.shared:get_keys([max]): at most max keys (default
// 1024, 0: all), sorted.
func (v *vm) sGetKeys(L *glua.LState) int {
	n := L.OptInt(2, 1024)
	if n < 0 {
		L.ArgError(2, "max must be 0 (all) or a positive count")
	}
	v.rc.poke()
	keys := v.e.cfg.Shared.Keys(n)
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
	key := L.CheckString(2)
	old, val := dictArg(L, 3), dictArg(L, 4)
	ok, err := v.e.cfg.Shared.SetIf(key, old, val, ttlArg(L, 5))
	return dictResult(L, "cas", ok, err, "changed")
}
