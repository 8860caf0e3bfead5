package lua

import (
	"context"

	glua "github.com/yuin/gopher-lua"
)

// buildSession makes r.session: a userdata whose methods (called with
// ':') reach the request's scripting.Session.
func (v *vm) buildSession() {
	L := v.L
	methods := L.NewTable()
	L.SetFuncs(methods, map[string]glua.LGFunction{
		"get": v.sessGet, "set": v.sessSet, "delete": v.sessDelete,
		"destroy": v.sessDestroy, "regenerate_id": v.sessRegenerate,
	})
	v.sessUD = newObject(L, func(L *glua.LState) int {
		L.Push(methods.RawGetString(L.CheckString(2)))
		return 1
	}, func(L *glua.LState) int {
		L.RaiseError("r.session is not assignable; use r.session:set(key, value)")
		return 0
	})
}

// session checks a call of an r.session method and returns the context for
// its store calls: the request's own context (the run's deadline is
// checked by the VM; the store bounds each call with its timeout).
func (v *vm) session(L *glua.LState, what string) context.Context {
	v.request(L)
	if L.Get(1) != v.sessUD {
		L.RaiseError("%s: call it with ':' (r.session:%s(...))", what, what[len("r.session:"):])
	}
	v.rc.poke() // store I/O may be slow: check the deadline next
	ctx := v.rc.parent
	if ctx == nil {
		ctx = context.Background()
	}
	return ctx
}

func (v *vm) sessGet(L *glua.LState) int {
	val, err := v.api.SessionGet(v.session(L, "r.session:get"), L.CheckString(2))
	v.check(L, "r.session:get", 1, err)
	L.Push(v.toLua(val))
	return 1
}

func (v *vm) sessSet(L *glua.LState) int {
	ctx := v.session(L, "r.session:set")
	k := L.CheckString(2)
	var x any
	if lv := L.Get(3); lv != glua.LNil {
		var err error
		if x, err = v.fromLua(lv); err != nil {
			L.ArgError(3, "r.session:set: "+err.Error())
		}
	}
	v.check(L, "r.session:set", 1, v.api.SessionSet(ctx, k, x))
	return 0
}

func (v *vm) sessDelete(L *glua.LState) int {
	ctx := v.session(L, "r.session:delete")
	v.check(L, "r.session:delete", 1, v.api.SessionDelete(ctx, L.CheckString(2)))
	return 0
}

func (v *vm) sessDestroy(L *glua.LState) int {
	v.check(L, "r.session:destroy", 1, v.api.SessionDestroy(v.session(L, "r.session:destroy")))
	return 0
}

func (v *vm) sessRegenerate(L *glua.LState) int {
	v.check(L, "r.session:regenerate_id", 1, v.api.SessionRegenerateID(v.session(L, "r.session:regenerate_id")))
	return 0
}
