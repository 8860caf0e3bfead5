package lua

import (
	"errors"
	"time"

	glua "github.com/yuin/gopher-lua"

	"github.com/hostd/hostd/scripting"
)

// hostdLib returns the hostd module table.
func (v *vm) hostdLib() *glua.LTable {
	L := v.L
	t := L.NewTable()
	L.SetFuncs(t, map[string]glua.LGFunction{
		"log":           v.hLog,
		"json_encode":   v.hJSONEncode,
		"json_decode":   v.hJSONDecode,
		"sha256":        v.hSHA256,
		"hmac_sha256":   v.hHMACSHA256,
		"base64_encode": v.hBase64Encode,
		"base64_decode": v.hBase64Decode,
		"time":          hTime,
	})
	t.RawSetString("base64", t.RawGetString("base64_encode"))
	v.hostdAPI(t)                       // api.go: regex, URL, crypto, JSON sentinels
	t.RawSetString("http", v.httpLib()) // http.go

	methods := L.NewTable()
	L.SetFuncs(methods, map[string]glua.LGFunction{
		"get": v.sGet, "set": v.sSet, "incr": v.sIncr, "delete": v.sDelete,
	})
	L.SetFuncs(methods, v.sharedOps()) // shared_ops.go
	shared := L.NewUserData()
	mt := L.NewTable()
	mt.RawSetString("__index", readOnly(L, methods))
	mt.RawSetString("__newindex", L.NewFunction(func(L *glua.LState) int {
		L.RaiseError("hostd.shared is not assignable; use hostd.shared:set(key, value [, ttl])")
		return 0
	}))
	mt.RawSetString("__metatable", glua.LString(lockedMT))
	shared.Metatable = mt
	t.RawSetString("shared", shared)
	return t
}

func (v *vm) hLog(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	lvl := L.CheckString(1)
	msg := L.ToStringMeta(L.CheckAny(2)).String()
	ctx := v.rc.parent
	if ctx == nil {
		L.RaiseError("hostd.log is not available outside a hook run")
	}
	v.check(L, "hostd.log", 0, v.api.Log(ctx, lvl, msg))
	return 0
}

// checkInput returns argument n as a string of at most MaxInput bytes.
func (v *vm) checkInput(L *glua.LState, n int) string {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	s := L.CheckString(n)
	v.check(L, "", n-1, v.api.CheckInput(s, 1))
	return s
}

// pushResult pushes s or raises err (see check), for the functions of
// hostd that take plain arguments.
func (v *vm) pushResult(L *glua.LState, name string, s string, err error) int {
	v.check(L, name, 0, err)
	L.Push(glua.LString(s))
	return 1
}

func (v *vm) hJSONEncode(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	x, err := v.fromLua(L.CheckAny(1))
	if err != nil {
		L.RaiseError("hostd.json_encode: %s", err.Error())
	}
	b, err := scripting.EncodeJSON(x, v.e.cfg.Limits.MaxInput)
	if err != nil {
		L.RaiseError("hostd.json_encode: %s", err.Error())
	}
	L.Push(glua.LString(b))
	return 1
}

// hJSONDecode returns the decoded value, or nil and an error message for
// invalid JSON.
func (v *vm) hJSONDecode(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	s := L.CheckString(1)
	L.ChargeMemory(int64(len(s))) // the strings of the result; its tables are charged as made
	x, err := scripting.DecodeJSON([]byte(s), v.e.cfg.Limits.MaxInput)
	if err != nil {
		L.Push(glua.LNil)
		L.Push(glua.LString(err.Error()))
		return 2
	}
	L.Push(v.toLua(x))
	return 1
}

func (v *vm) hSHA256(L *glua.LState) int {
	v.rc.poke()
	sum, err := v.api.SHA256(L.CheckString(1))
	return v.pushResult(L, "hostd.sha256", sum, err)
}

func (v *vm) hHMACSHA256(L *glua.LState) int {
	v.rc.poke()
	sum, err := v.api.HMACSHA256(L.CheckString(1), L.CheckString(2))
	return v.pushResult(L, "hostd.hmac_sha256", sum, err)
}

func (v *vm) hBase64Encode(L *glua.LState) int {
	v.rc.poke()
	s, err := v.api.Base64Encode(L.CheckString(1))
	return v.pushResult(L, "hostd.base64_encode", s, err)
}

// hBase64Decode decodes standard or URL-safe base64, padded or not; it
// returns nil and a message for invalid input.
func (v *vm) hBase64Decode(L *glua.LState) int {
	v.rc.poke()
	b, err := v.api.Base64Decode(L.CheckString(1))
	if errors.Is(err, scripting.ErrInvalidBase64) {
		return fail(L, err.Error())
	}
	return v.pushResult(L, "hostd.base64_decode", string(b), err)
}

func hTime(L *glua.LState) int {
	L.Push(glua.LNumber(float64(time.Now().UnixMicro()) / 1e6))
	return 1
}

// Shared dictionary methods; the first argument is hostd.shared itself.

// Shared dictionary methods; the first argument is hostd.shared itself.

// dictMiss pushes the result of a store: true, or false and why not.
func dictMiss(L *glua.LState, miss string) int {
	if miss != "" {
		L.Push(glua.LFalse)
		L.Push(glua.LString(miss))
		return 2
	}
	L.Push(glua.LTrue)
	return 1
}

func (v *vm) sGet(L *glua.LState) int {
	switch x := v.api.SharedGet(L.CheckString(2)).(type) {
	case string:
		L.Push(glua.LString(x))
	case float64:
		L.Push(glua.LNumber(x))
	case int64:
		L.Push(glua.LNumber(x))
	case bool:
		L.Push(glua.LBool(x))
	default:
		L.Push(glua.LNil)
	}
	return 1
}

// sSet stores a string, number or boolean (nil deletes). It returns true,
// or false and a message when the dictionary is full.
func (v *vm) sSet(L *glua.LState) int {
	miss, err := v.api.SharedSet(L.CheckString(2), dictArg(L, 3), float64(L.OptNumber(4, 0)))
	v.check(L, "hostd.shared:set", 1, err)
	return dictMiss(L, miss)
}

// sIncr adds delta (default 1) to key; an absent key starts at init
// (default 0) with ttl. It returns the new value, or nil and a message.
func (v *vm) sIncr(L *glua.LState) int {
	n, miss, err := v.api.SharedIncr(L.CheckString(2), float64(L.OptNumber(3, 1)), float64(L.OptNumber(4, 0)), float64(L.OptNumber(5, 0)))
	v.check(L, "hostd.shared:incr", 1, err)
	if miss != "" {
		return fail(L, string(miss))
	}
	L.Push(glua.LNumber(n))
	return 1
}

func (v *vm) sDelete(L *glua.LState) int {
	v.api.SharedDelete(L.CheckString(2))
	return 0
}
