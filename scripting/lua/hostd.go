package lua

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"math"
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

var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
}

func (v *vm) hLog(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	lvl, ok := logLevels[L.CheckString(1)]
	if !ok {
		L.ArgError(1, `level must be "debug", "info", "warn" or "error"`)
	}
	msg := L.ToStringMeta(L.CheckAny(2)).String()
	if len(msg) > v.e.cfg.Limits.MaxInput {
		msg = msg[:v.e.cfg.Limits.MaxInput]
	}
	ctx := v.rc.parent
	if ctx == nil {
		L.RaiseError("hostd.log is not available outside a hook run")
	}
	v.logger().Log(ctx, lvl, msg, "hook", v.path)
	return 0
}

// checkInput returns argument n as a string of at most MaxInput bytes.
func (v *vm) checkInput(L *glua.LState, n int) string {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	s := L.CheckString(n)
	if len(s) > v.e.cfg.Limits.MaxInput {
		L.ArgError(n, "string is longer than the input limit")
	}
	return s
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
	sum := sha256.Sum256([]byte(v.checkInput(L, 1)))
	L.Push(glua.LString(hex.EncodeToString(sum[:])))
	return 1
}

func (v *vm) hHMACSHA256(L *glua.LState) int {
	key, msg := v.checkInput(L, 1), v.checkInput(L, 2)
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	L.Push(glua.LString(hex.EncodeToString(m.Sum(nil))))
	return 1
}

func (v *vm) hBase64Encode(L *glua.LState) int {
	L.Push(glua.LString(base64.StdEncoding.EncodeToString([]byte(v.checkInput(L, 1)))))
	return 1
}

// hBase64Decode decodes standard or URL-safe base64, padded or not; it
// returns nil and a message for invalid input.
func (v *vm) hBase64Decode(L *glua.LState) int {
	s := v.checkInput(L, 1)
	var b []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err = enc.DecodeString(s); err == nil {
			break
		}
	}
	if err != nil {
		L.Push(glua.LNil)
		L.Push(glua.LString("invalid base64"))
		return 2
	}
	L.Push(glua.LString(b))
	return 1
}

func hTime(L *glua.LState) int {
	L.Push(glua.LNumber(float64(time.Now().UnixMicro()) / 1e6))
	return 1
}

// Shared dictionary methods; the first argument is hostd.shared itself.

func ttlArg(L *glua.LState, n int) time.Duration {
	ttl := float64(L.OptNumber(n, 0))
	if ttl < 0 || math.IsNaN(ttl) || ttl > 10*365*86400 {
		L.ArgError(n, "ttl must be 0 (none) or a number of seconds")
	}
	return time.Duration(ttl * float64(time.Second))
}

func (v *vm) sGet(L *glua.LState) int {
	switch x := v.e.cfg.Shared.Get(L.CheckString(2)).(type) {
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
	key := L.CheckString(2)
	var val any
	switch x := L.Get(3).(type) {
	case *glua.LNilType:
	case glua.LString:
		val = string(x)
	case glua.LNumber:
		val = float64(x)
	case glua.LBool:
		val = bool(x)
	default:
		L.ArgError(3, "value must be a string, number, boolean or nil")
	}
	err := v.e.cfg.Shared.Set(key, val, ttlArg(L, 4))
	if errors.Is(err, scripting.ErrDictFull) {
		L.Push(glua.LFalse)
		L.Push(glua.LString(dictFullMsg(err)))
		return 2
	}
	if err != nil {
		L.RaiseError("hostd.shared:set: %s", err.Error())
	}
	L.Push(glua.LTrue)
	return 1
}

// sIncr adds delta (default 1) to key; an absent key starts at init
// (default 0) with ttl. It returns the new value, or nil and a message.
// dictFullMsg is what a hook sees for a set or incr that failed with
// scripting.ErrDictFull.
func dictFullMsg(err error) string {
	if errors.Is(err, scripting.ErrDictBudget) {
		return "shared dictionary is over its byte budget"
	}
	return "shared dictionary is full"
}

func (v *vm) sIncr(L *glua.LState) int {
	key := L.CheckString(2)
	delta := float64(L.OptNumber(3, 1))
	init := float64(L.OptNumber(4, 0))
	n, err := v.e.cfg.Shared.Incr(key, delta, init, ttlArg(L, 5))
	if err != nil {
		if errors.Is(err, scripting.ErrDictFull) {
			L.Push(glua.LNil)
			L.Push(glua.LString(dictFullMsg(err)))
			return 2
		}
		L.Push(glua.LNil)
		L.Push(glua.LString(err.Error()))
		return 2
	}
	L.Push(glua.LNumber(n))
	return 1
}

func (v *vm) sDelete(L *glua.LState) int {
	v.e.cfg.Shared.Delete(L.CheckString(2))
	return 0
}
