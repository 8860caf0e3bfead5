package lua

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"time"

	glua "github.com/yuin/gopher-lua"

	"github.com/hostd/hostd/scripting"
)

// hostdAPI adds the pure functions of the hook API to the hostd table t:
// hostd.re, URL escaping, crypto and encoding helpers, HTTP dates and the
// JSON sentinels.
func (v *vm) hostdAPI(t *glua.LTable) {
	L := v.L
	t.RawSetString("re", readOnly(L, v.reLib()))
	L.SetFuncs(t, map[string]glua.LGFunction{
		"escape_uri":          v.hEscape(false),
		"escape_form":         v.hEscape(true),
		"unescape_uri":        v.hUnescape(false),
		"unescape_form":       v.hUnescape(true),
		"encode_args":         v.hEncodeArgs,
		"decode_args":         v.hDecodeArgs,
		"md5":                 v.hDigestHex("md5"),
		"sha1":                v.hDigestHex("sha1"),
		"sha512":              v.hDigestHex("sha512"),
		"hmac_md5":            v.hHMACHex("md5"),
		"hmac_sha1":           v.hHMACHex("sha1"),
		"hmac_sha512":         v.hHMACHex("sha512"),
		"digest":              v.hDigest,
		"hmac":                v.hHMAC,
		"hex_encode":          v.hHexEncode,
		"hex_decode":          v.hHexDecode,
		"base64url_encode":    v.hBase64URLEncode,
		"base64url_decode":    v.hBase64Decode,
		"random_bytes":        v.hRandomBytes,
		"random_token":        v.hRandomToken,
		"constant_time_equal": v.hConstantTimeEqual,
		"http_time":           hHTTPTime,
		"parse_http_time":     hParseHTTPTime,
	})

	// JSON sentinels, like lua-cjson's cjson.null, cjson.empty_array and
	// cjson.array_mt.
	v.jsonNull = sentinel(L, "hostd.json_null")
	v.jsonEmptyArray = sentinel(L, "hostd.json_empty_array")
	v.jsonArrayMT = readOnly(L, L.NewTable())
	t.RawSetString("json_null", v.jsonNull)
	t.RawSetString("json_empty_array", v.jsonEmptyArray)
	t.RawSetString("json_array_mt", v.jsonArrayMT)
}

// sentinel returns a userdata that prints as name and cannot be changed.
func sentinel(L *glua.LState, name string) *glua.LUserData {
	ud := L.NewUserData()
	mt := L.NewTable()
	mt.RawSetString("__tostring", L.NewFunction(func(L *glua.LState) int {
		L.Push(glua.LString(name))
		return 1
	}))
	mt.RawSetString("__metatable", glua.LString(lockedMT))
	ud.Metatable = mt
	return ud
}

// fail returns nil and msg: the error convention of functions whose
// failure depends on data (invalid escapes, a malformed body).
func fail(L *glua.LState, msg string) int {
	L.Push(glua.LNil)
	L.Push(glua.LString(msg))
	return 2
}

func (v *vm) hEscape(form bool) glua.LGFunction {
	return func(L *glua.LState) int {
		L.Push(glua.LString(scripting.EscapeURI(v.checkInput(L, 1), form)))
		return 1
	}
}

func (v *vm) hUnescape(form bool) glua.LGFunction {
	return func(L *glua.LState) int {
		s, err := scripting.UnescapeURI(v.checkInput(L, 1), form)
		if err != nil {
			return fail(L, "invalid escape")
		}
		L.Push(glua.LString(s))
		return 1
	}
}

// hEncodeArgs is hostd.encode_args(t), like ngx.encode_args.
func (v *vm) hEncodeArgs(L *glua.LState) int {
	x, err := v.fromLua(L.CheckTable(1))
	if err != nil {
		L.ArgError(1, err.Error())
	}
	m, ok := x.(map[string]any)
	if !ok { // a list: its indexes are the names
		m = map[string]any{}
		for i, e := range x.([]any) {
			m[glua.LNumber(i+1).String()] = e
		}
	}
	s, err := scripting.EncodeArgs(m)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	L.Push(glua.LString(s))
	return 1
}

func (v *vm) hDecodeArgs(L *glua.LState) int {
	L.Push(v.argsTable(scripting.ParseArgs(v.checkInput(L, 1))))
	return 1
}

// argsTable converts name -> string or list of strings.
func (v *vm) argsTable(m map[string]any) *glua.LTable {
	L := v.L
	t := L.CreateTable(0, len(m))
	for k, val := range m {
		t.RawSetString(k, v.toLua(val))
	}
	return t
}

func (v *vm) hDigestHex(alg string) glua.LGFunction {
	return func(L *glua.LState) int {
		d, _ := scripting.Digest(alg, v.checkInput(L, 1))
		L.Push(glua.LString(hex.EncodeToString(d)))
		return 1
	}
}

func (v *vm) hHMACHex(alg string) glua.LGFunction {
	return func(L *glua.LState) int {
		d, _ := scripting.HMAC(alg, v.checkInput(L, 1), v.checkInput(L, 2))
		L.Push(glua.LString(hex.EncodeToString(d)))
		return 1
	}
}

// hDigest is hostd.digest(alg, s): the raw digest bytes.
func (v *vm) hDigest(L *glua.LState) int {
	d, err := scripting.Digest(L.CheckString(1), v.checkInput(L, 2))
	if err != nil {
		L.ArgError(1, err.Error())
	}
	L.Push(glua.LString(d))
	return 1
}

// hHMAC is hostd.hmac(alg, key, s): the raw HMAC bytes.
func (v *vm) hHMAC(L *glua.LState) int {
	d, err := scripting.HMAC(L.CheckString(1), v.checkInput(L, 2), v.checkInput(L, 3))
	if err != nil {
		L.ArgError(1, err.Error())
	}
	L.Push(glua.LString(d))
	return 1
}

func (v *vm) hHexEncode(L *glua.LState) int {
	L.Push(glua.LString(hex.EncodeToString([]byte(v.checkInput(L, 1)))))
	return 1
}

func (v *vm) hHexDecode(L *glua.LState) int {
	b, err := hex.DecodeString(v.checkInput(L, 1))
	if err != nil {
		return fail(L, "invalid hex")
	}
	L.Push(glua.LString(b))
	return 1
}

func (v *vm) hBase64URLEncode(L *glua.LState) int {
	L.Push(glua.LString(base64.RawURLEncoding.EncodeToString([]byte(v.checkInput(L, 1)))))
	return 1
}

func (v *vm) hRandomBytes(L *glua.LState) int {
	b, err := scripting.RandomBytes(L.CheckInt(1))
	if err != nil {
		L.ArgError(1, err.Error())
	}
	L.Push(glua.LString(b))
	return 1
}

func (v *vm) hRandomToken(L *glua.LState) int {
	s, err := scripting.RandomToken(L.OptInt(1, 32))
	if err != nil {
		L.ArgError(1, err.Error())
	}
	L.Push(glua.LString(s))
	return 1
}

// hConstantTimeEqual compares two strings in time that depends only on
// their lengths.
func (v *vm) hConstantTimeEqual(L *glua.LState) int {
	a, b := v.checkInput(L, 1), v.checkInput(L, 2)
	L.Push(glua.LBool(subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1))
	return 1
}

func hHTTPTime(L *glua.LState) int {
	var t float64
	if L.Get(1) == glua.LNil {
		t = float64(time.Now().Unix())
	} else {
		t = float64(L.CheckNumber(1))
	}
	s, err := scripting.HTTPTime(t)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	L.Push(glua.LString(s))
	return 1
}

func hParseHTTPTime(L *glua.LState) int {
	t, ok := scripting.ParseHTTPTime(L.CheckString(1))
	if !ok {
		L.Push(glua.LNil)
		return 1
	}
	L.Push(glua.LNumber(t))
	return 1
}

// Request side: r.cookies, r:set_cookie, r:post_args, r:json_body, and
// header iteration.

// requestAPI adds the request methods of the hook API.
func (v *vm) requestAPI(methods *glua.LTable) {
	v.L.SetFuncs(methods, map[string]glua.LGFunction{
		"set_cookie": v.rSetCookie, "post_args": v.rPostArgs, "json_body": v.rJSONBody,
	})
}

// buildCookies makes r.cookies: a read-only object whose index looks the
// name up in the request's Cookie headers (no table is built per request)
// and whose pairs iterates over them, the first of a repeated name only.
func (v *vm) buildCookies() *glua.LUserData {
	L := v.L
	next := L.G.Global.RawGetString("next") // before the globals are emptied
	ud := newObject(L, func(L *glua.LState) int {
		if val, ok := scripting.Cookie(v.request(L).HeadersIn(), L.CheckString(2)); ok {
			L.Push(glua.LString(val))
		} else {
			L.Push(glua.LNil)
		}
		return 1
	}, func(L *glua.LState) int {
		L.RaiseError("r.cookies is read-only (use r:set_cookie)")
		return 0
	})
	ud.Metatable.(*glua.LTable).RawSetString("__pairs", L.NewFunction(func(L *glua.LState) int {
		m := scripting.ParseCookies(v.request(L).HeadersIn())
		t := L.CreateTable(0, len(m))
		for k, s := range m {
			t.RawSetString(k, glua.LString(s))
		}
		L.Push(next)
		L.Push(t)
		L.Push(glua.LNil)
		return 3
	}))
	return ud
}

// rSetCookie is r:set_cookie{name=..., value=..., ...}.
func (v *vm) rSetCookie(L *glua.LState) int {
	v.request(L)
	x, err := v.fromLua(L.CheckTable(2))
	if err != nil {
		L.ArgError(2, err.Error())
	}
	opts, ok := x.(map[string]any)
	if !ok {
		L.ArgError(2, "want a table of cookie options (name, value, path ...)")
	}
	v.check(L, "r:set_cookie", 1, v.api.SetCookie(opts))
	return 0
}

// bodyBytes returns the request body or raises the host's error (a body over
// the limit fails the hook with scripting.ErrBodyTooLarge: 413).
func (v *vm) bodyBytes(L *glua.LState, what string) []byte {
	v.rc.poke()
	v.request(L)
	b, err := v.api.Body()
	v.check(L, what, 0, err)
	return b
}

// rPostArgs is r:post_args(): the form fields of a urlencoded or
// multipart body (see scripting.ParseForm), or nil and a message for a
// malformed one.
func (v *vm) rPostArgs(L *glua.LState) int {
	v.rc.poke()
	v.request(L)
	m, err := v.api.PostArgs()
	if err != nil && !errors.As(err, new(*scripting.HostError)) {
		return fail(L, err.Error())
	}
	v.check(L, "r:post_args", 1, err)
	L.Push(v.argsTable(m))
	return 1
}

// rJSONBody is r:json_body(): the decoded body, or nil and a message.
func (v *vm) rJSONBody(L *glua.LState) int {
	v.rc.poke()
	v.request(L)
	x, err := v.api.JSONBody()
	if err != nil && !errors.As(err, new(*scripting.HostError)) {
		return fail(L, err.Error())
	}
	v.check(L, "r:json_body", 1, err)
	L.Push(v.toLua(x))
	return 1
}

// headerPairs is the __pairs of r.headers_in and r.headers_out: their
// names in lower case, sorted, each with its value, or a list for a
// header with several values.
func (v *vm) headerPairs(in bool) glua.LGFunction {
	return func(L *glua.LState) int {
		v.request(L)
		v.rc.poke()
		names, values := v.api.Headers(in)
		i := 0
		L.Push(L.NewFunction(func(L *glua.LState) int {
			if i >= len(names) {
				L.Push(glua.LNil)
				return 1
			}
			vals := values[i]
			L.Push(glua.LString(names[i]))
			i++
			if len(vals) == 1 {
				L.Push(glua.LString(vals[0]))
			} else {
				t := L.CreateTable(len(vals), 0)
				for _, s := range vals {
					t.Append(glua.LString(s))
				}
				L.Push(t)
			}
			return 2
		}))
		return 1
	}
}

// pairs is the sandbox's pairs: it honours a __pairs metamethod (Lua 5.2),
// which gopher-lua's does not, so pairs(r.headers_in) iterates.
func (v *vm) pairs(orig *glua.LFunction) glua.LGFunction {
	return func(L *glua.LState) int {
		obj := L.CheckAny(1)
		if mm := L.GetMetaField(obj, "__pairs"); mm != glua.LNil {
			L.Push(mm)
			L.Push(obj)
			L.Call(1, 3)
			return 3
		}
		L.Push(orig)
		L.Push(obj)
		L.Call(1, 3)
		return 3
	}
}
