package lua

import (
	"context"

	glua "github.com/yuin/gopher-lua"

	"github.com/hostd/hostd/scripting"
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

// session returns the request's session and the context for its store
// calls: the request's own context (the run's deadline is checked by the
// VM; the store bounds each call with its timeout).
func (v *vm) session(L *glua.LState, what string) (scripting.Session, context.Context) {
	req := v.request(L)
	if L.Get(1) != v.sessUD {
		L.RaiseError("%s: call it with ':' (r.session:%s(...))", what, what[len("r.session:"):])
	}
	s, err := req.Session()
	if err != nil {
		v.hostErr = err
		L.RaiseError("%s: %s", what, err.Error())
	}
	v.rc.poke() // store I/O may be slow: check the deadline next
	ctx := v.rc.parent
	if ctx == nil {
		ctx = context.Background()
	}
	return s, ctx
}

func (v *vm) sessFail(L *glua.LState, what string, err error) {
	v.hostErr = err
	L.RaiseError("%s: %s", what, err.Error())
}

func (v *vm) sessGet(L *glua.LState) int {
	s, ctx := v.session(L, "r.session:get")
	val, err := s.Get(ctx, L.CheckString(2))
	if err != nil {
		v.sessFail(L, "r.session:get", err)
	}
	L.Push(v.toLua(val))
	return 1
}

func (v *vm) sessSet(L *glua.LState) int {
	s, ctx := v.session(L, "r.session:set")
	k := L.CheckString(2)
	var x any
	if lv := L.Get(3); lv != glua.LNil {
		var err error
		if x, err = v.fromLua(lv); err != nil {
			L.ArgError(3, "r.session:set: "+err.Error())
		}
	}
	if err := s.Set(ctx, k, x); err != nil {
		v.sessFail(L, "r.session:set", err)
	}
	return 0
}

func (v *vm) sessDelete(L *glua.LState) int {
	s, ctx := v.session(L, "r.session:delete")
	if err := s.Delete(ctx, L.CheckString(2)); err != nil {
		v.sessFail(L, "r.session:delete", err)
	}
	return 0
}

func (v *vm) sessDestroy(L *glua.LState) int {
	s, ctx := v.session(L, "r.session:destroy")
	if err := s.Destroy(ctx); err != nil {
		v.sessFail(L, "r.session:destroy", err)
	}
	return 0
}

func (v *vm) sessRegenerate(L *glua.LState) int {
	s, ctx := v.session(L, "r.session:regenerate_id")
	if err := s.RegenerateID(ctx); err != nil {
		v.sessFail(L, "r.session:regenerate_id", err)
	}
	return 0
}
