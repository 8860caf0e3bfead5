package lua

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"unsafe"

	glua "github.com/yuin/gopher-lua"

	"github.com/hostd/hostd/scripting"
)

// buildRequest makes the request object r and its header and vars objects.
// They are userdata with shared, locked metatables, made once per VM and
// bound to the current request through v.req, so a run allocates no
// request table.
func (v *vm) buildRequest() {
	L := v.L
	methods := L.NewTable()
	L.SetFuncs(methods, map[string]glua.LGFunction{
		"write": v.rWrite, "puts": v.rPuts, "redirect": v.rRedirect,
		"exit": v.rExit, "basic_auth": v.rBasicAuth, "set_path": v.rSetPath,
	})
	v.requestAPI(methods) // api.go
	v.cookiesUD = v.buildCookies()

	v.reqUD = newObject(L, func(L *glua.LState) int { return v.rIndex(L, methods) }, v.rNewIndex)
	v.hinUD = newObject(L, v.headersInIndex, func(L *glua.LState) int {
		L.RaiseError("r.headers_in is read-only")
		return 0
	})
	v.houtUD = newObject(L, v.headersOutIndex, v.headersOutNewIndex)
	v.hinUD.Metatable.(*glua.LTable).RawSetString("__pairs", L.NewFunction(v.headerPairs(true)))
	v.houtUD.Metatable.(*glua.LTable).RawSetString("__pairs", L.NewFunction(v.headerPairs(false)))
	v.varsUD = newObject(L, v.varsIndex, v.varsNewIndex)
	v.buildSession()
}

// newObject returns a userdata whose locked metatable has the given
// __index and __newindex functions.
func newObject(L *glua.LState, index, newindex glua.LGFunction) *glua.LUserData {
	ud := L.NewUserData()
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(index))
	mt.RawSetString("__newindex", L.NewFunction(newindex))
	mt.RawSetString("__metatable", glua.LString(lockedMT))
	ud.Metatable = mt
	return ud
}

// request returns the current request or raises an error when the object
// is used outside a run (e.g. from a stale coroutine).
func (v *vm) request(L *glua.LState) scripting.Request {
	if v.req == nil {
		L.RaiseError("the request object is not valid outside its hook run")
	}
	return v.req
}

func (v *vm) logger() *slog.Logger {
	if v.req != nil {
		if l := v.req.Logger(); l != nil {
			return l
		}
	}
	return v.e.cfg.Logger
}

func (v *vm) rIndex(L *glua.LState, methods *glua.LTable) int {
	req := v.request(L)
	k := L.CheckString(2)
	var ret glua.LValue
	switch k {
	case "method":
		ret = glua.LString(req.Method())
	case "uri":
		ret = glua.LString(req.URI())
	case "path":
		ret = glua.LString(req.Path())
	case "query", "args":
		if v.args == nil {
			v.args = v.queryTable(L, req.Query())
		}
		ret = v.args
	case "query_string":
		ret = glua.LString(req.Query())
	case "host":
		ret = glua.LString(req.Host())
	case "scheme":
		ret = glua.LString(req.Scheme())
	case "remote_addr":
		ret = glua.LString(req.RemoteAddr())
	case "cookies":
		ret = v.cookiesUD // api.go
	case "headers_in":
		ret = v.hinUD
	case "headers_out":
		ret = v.houtUD
	case "vars":
		ret = v.varsUD
	case "session":
		ret = v.sessUD
	case "status":
		ret = glua.LNumber(req.Status())
	case "phase":
		ret = glua.LString(v.phase.String())
	case "body":
		if v.body == nil {
			v.rc.poke()
			b, err := req.Body()
			if err != nil {
				v.hostErr = err
				L.RaiseError("r.body: %s", err.Error())
			}
			v.body = glua.LString(b)
		}
		ret = v.body
	default:
		ret = methods.RawGetString(k)
	}
	L.Push(ret)
	return 1
}

func (v *vm) rNewIndex(L *glua.LState) int {
	req := v.request(L)
	switch k := L.CheckString(2); k {
	case "status":
		st, ok := statusCode(L.CheckNumber(3))
		if !ok {
			L.ArgError(3, "status must be an integer from 100 to 999")
		}
		req.SetStatus(st)
	default:
		L.RaiseError("r.%s is read-only (writable: r.status, r.headers_out[name], r.vars[name])", k)
	}
	return 0
}

// queryTable parses a query string into name -> value, or name -> list of
// values for a repeated name.
func (v *vm) queryTable(L *glua.LState, q string) *glua.LTable {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	t := L.NewTable()
	if q == "" {
		return t
	}
	vals, _ := url.ParseQuery(q) // keeps the well-formed pairs
	for k, vs := range vals {
		if len(vs) == 1 {
			t.RawSetString(k, glua.LString(vs[0]))
			continue
		}
		l := L.CreateTable(len(vs), 0)
		for _, s := range vs {
			l.Append(glua.LString(s))
		}
		t.RawSetString(k, l)
	}
	return t
}

// write passes the arguments' bytes to Request.Write.
func (v *vm) write(L *glua.LState, newline bool) int {
	v.request(L)
	n := L.GetTop()
	for i := 2; i <= n; i++ {
		v.writeString(L, L.CheckString(i))
	}
	if newline {
		v.writeString(L, "\n")
	}
	return 0
}

func (v *vm) writeString(L *glua.LState, s string) {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	if s == "" {
		return
	}
	// Write must not modify or retain p (io.Writer), so the string's
	// bytes are passed without a copy.
	if _, err := v.req.Write(unsafe.Slice(unsafe.StringData(s), len(s))); err != nil {
		v.hostErr = err
		L.RaiseError("r:write: %s", err.Error())
	}
}

func (v *vm) rWrite(L *glua.LState) int { return v.write(L, false) }
func (v *vm) rPuts(L *glua.LState) int  { return v.write(L, true) }

func (v *vm) rRedirect(L *glua.LState) int {
	req := v.request(L)
	loc := L.CheckString(2)
	st := L.OptInt(3, http.StatusFound)
	switch st {
	case 301, 302, 303, 307, 308:
	default:
		L.ArgError(3, "redirect status must be 301, 302, 303, 307 or 308")
	}
	if loc == "" || strings.ContainsAny(loc, "\r\n\x00") {
		L.ArgError(2, "invalid redirect location")
	}
	req.HeadersOut().Set("Location", loc)
	req.SetStatus(st)
	return v.exit(L, st)
}

func (v *vm) rExit(L *glua.LState) int {
	v.request(L)
	st, ok := statusCode(L.CheckNumber(2))
	if !ok {
		L.ArgError(2, "status must be an integer from 100 to 999")
	}
	return v.exit(L, st)
}

// rBasicAuth returns the user and password of a Basic Authorization
// header, or nil.
func (v *vm) rBasicAuth(L *glua.LState) int {
	req := v.request(L)
	user, pass, ok := scripting.BasicAuth(req.HeadersIn().Get("Authorization"))
	if !ok {
		L.Push(glua.LNil)
		return 1
	}
	L.Push(glua.LString(user))
	L.Push(glua.LString(pass))
	return 2
}

func (v *vm) rSetPath(L *glua.LState) int {
	req := v.request(L)
	p := L.CheckString(2)
	if v.phase != scripting.PhaseRewrite {
		L.RaiseError("r:set_path is only available in the rewrite phase")
	}
	if err := req.SetPath(p); err != nil {
		v.hostErr = err
		L.RaiseError("r:set_path: %s", err.Error())
	}
	v.args = nil // the query may have changed
	return 0
}

// headersInIndex returns the request header name (case-insensitive), its
// values joined by ", " ("; " for Cookie), or nil.
func (v *vm) headersInIndex(L *glua.LState) int {
	req := v.request(L)
	if val, ok := scripting.HeaderIn(req.HeadersIn(), L.CheckString(2)); ok {
		L.Push(glua.LString(val))
	} else {
		L.Push(glua.LNil)
	}
	return 1
}

func (v *vm) headersOutIndex(L *glua.LState) int {
	req := v.request(L)
	vals := req.HeadersOut().Values(L.CheckString(2))
	if len(vals) == 0 {
		L.Push(glua.LNil)
	} else {
		L.Push(glua.LString(strings.Join(vals, ", ")))
	}
	return 1
}

// headersOutNewIndex sets a response header: a string (or number) sets it,
// a list of strings sets several values, nil deletes it.
func (v *vm) headersOutNewIndex(L *glua.LState) int {
	req := v.request(L)
	name := L.CheckString(2)
	if !scripting.ValidHeaderName(name) {
		L.ArgError(2, "invalid header name")
	}
	h := req.HeadersOut()
	switch val := L.Get(3).(type) {
	case *glua.LNilType:
		h.Del(name)
	case glua.LString, glua.LNumber:
		s := val.String()
		if !scripting.ValidHeaderValue(s) {
			L.ArgError(3, "invalid header value")
		}
		h.Set(name, s)
	case *glua.LTable:
		h.Del(name)
		for i := 1; i <= val.Len(); i++ {
			s, ok := val.RawGetInt(i).(glua.LString)
			if !ok || !scripting.ValidHeaderValue(string(s)) {
				L.ArgError(3, "invalid header value in list")
			}
			h.Add(name, string(s))
		}
	default:
		L.ArgError(3, "header value must be a string, a number, a list of strings or nil")
	}
	return 0
}

func (v *vm) varsIndex(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	val, ok := v.vars(L)[L.CheckString(2)]
	if !ok {
		L.Push(glua.LNil)
		return 1
	}
	L.Push(v.toLua(val))
	return 1
}

func (v *vm) varsNewIndex(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	m := v.vars(L)
	k := L.CheckString(2)
	val := L.Get(3)
	if val == glua.LNil {
		delete(m, k)
		return 0
	}
	x, err := v.fromLua(val)
	if err != nil {
		L.ArgError(3, "r.vars: "+err.Error())
	}
	m[k] = x
	return 0
}

func (v *vm) vars(L *glua.LState) map[string]any {
	m := v.request(L).Vars()
	if m == nil {
		L.RaiseError("r.vars is not available for this request")
	}
	return m
}
