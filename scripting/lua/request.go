package lua

import (
	"errors"
	"net/url"
	"unsafe"

	glua "github.com/yuin/gopher-lua"

	"github.com/hostd/hostd/scripting"
)

// buildRequest makes the request object r and its header and vars objects.
// They are userdata with shared, locked metatables, made once per VM and
// bound to the current request through v.api.Req, so a run allocates no
// request table.
func (v *vm) buildRequest() {
	L := v.L
	methods := L.NewTable()
	L.SetFuncs(methods, map[string]glua.LGFunction{
		"remote_port": v.rRemotePort,
		"write":       v.rWrite, "puts": v.rPuts, "redirect": v.rRedirect,
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
	if v.api.Req == nil {
		L.RaiseError("the request object is not valid outside its hook run")
	}
	return v.api.Req
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
		ret = glua.LString(v.api.Phase.String())
	case "body":
		if v.body == nil {
			v.body = glua.LString(v.bodyBytes(L, "r.body"))
		}
		ret = v.body
	default:
		ret = methods.RawGetString(k)
	}
	L.Push(ret)
	return 1
}

func (v *vm) rNewIndex(L *glua.LState) int {
	v.request(L)
	switch k := L.CheckString(2); k {
	case "status":
		_, err := v.api.SetStatus(float64(L.CheckNumber(3)))
		v.check(L, "r.status", 2, err)
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
	v.check(L, "r:write", 1, v.api.Write(unsafe.Slice(unsafe.StringData(s), len(s))))
}

func (v *vm) rRemotePort(L *glua.LState) int {
	v.request(L)
	if port, ok := v.api.RemotePort(); ok {
		L.Push(glua.LNumber(port))
	} else {
		L.Push(glua.LNil)
	}
	return 1
}

func (v *vm) rWrite(L *glua.LState) int { return v.write(L, false) }
func (v *vm) rPuts(L *glua.LState) int  { return v.write(L, true) }

func (v *vm) rRedirect(L *glua.LState) int {
	v.request(L)
	st, err := v.api.Redirect(L.CheckString(2), float64(L.OptNumber(3, 0)))
	v.check(L, "r:redirect", 1, err)
	return v.exit(L, st)
}

func (v *vm) rExit(L *glua.LState) int {
	v.request(L)
	st, err := v.api.Exit(float64(L.CheckNumber(2)))
	v.check(L, "r:exit", 1, err)
	return v.exit(L, st)
}

// rBasicAuth returns the user and password of a Basic Authorization
// header, or nil.
func (v *vm) rBasicAuth(L *glua.LState) int {
	v.request(L)
	user, pass, ok := v.api.BasicAuth()
	if !ok {
		L.Push(glua.LNil)
		return 1
	}
	L.Push(glua.LString(user))
	L.Push(glua.LString(pass))
	return 2
}

func (v *vm) rSetPath(L *glua.LState) int {
	v.request(L)
	v.check(L, "r:set_path", 1, v.api.SetPath(L.CheckString(2)))
	v.args = nil // the query may have changed
	return 0
}

// headersInIndex returns the request header name (case-insensitive), its
// values joined by ", " ("; " for Cookie), or nil.
func (v *vm) headersInIndex(L *glua.LState) int {
	v.request(L)
	s, ok := v.api.HeaderIn(L.CheckString(2))
	return pushString(L, s, ok)
}

// pushString pushes s, or nil when ok is false.
func pushString(L *glua.LState, s string, ok bool) int {
	if ok {
		L.Push(glua.LString(s))
	} else {
		L.Push(glua.LNil)
	}
	return 1
}

func (v *vm) headersOutIndex(L *glua.LState) int {
	v.request(L)
	s, ok := v.api.HeaderOut(L.CheckString(2))
	return pushString(L, s, ok)
}

// headersOutNewIndex sets a response header: a string (or number) sets it,
// a list of strings sets several values, nil deletes it.
func (v *vm) headersOutNewIndex(L *glua.LState) int {
	v.request(L)
	name := L.CheckString(2)
	var err error
	switch val := L.Get(3).(type) {
	case *glua.LNilType:
		err = v.api.SetHeaderOut(name)
	case glua.LString, glua.LNumber:
		err = v.api.SetHeaderOut(name, val.String())
	case *glua.LTable:
		vals := make([]string, val.Len())
		for i := range vals {
			s, ok := val.RawGetInt(i + 1).(glua.LString)
			if !ok {
				L.ArgError(3, "header value list must hold strings")
			}
			vals[i] = string(s)
		}
		err = v.api.SetHeaderOut(name, vals...)
	default:
		L.ArgError(3, "header value must be a string, a number, a list of strings or nil")
	}
	v.check(L, "r.headers_out", 1, err)
	return 0
}

func (v *vm) varsIndex(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	v.request(L)
	val, err := v.api.Var(L.CheckString(2))
	v.check(L, "r.vars", 1, err)
	L.Push(v.toLua(val))
	return 1
}

func (v *vm) varsNewIndex(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	v.request(L)
	k := L.CheckString(2)
	var x any
	if val := L.Get(3); val != glua.LNil {
		var err error
		if x, err = v.fromLua(val); err != nil {
			L.ArgError(3, "r.vars: "+err.Error())
		}
	}
	v.check(L, "r.vars", 1, v.api.SetVar(k, x))
	return 0
}

// check raises err, the error of a scripting.Hook operation, in Lua: an
// argument error names Lua argument base+Arg (base 1 for a method called
// with ':'); a host error becomes the run's error unless the hook
// recovers.
func (v *vm) check(L *glua.LState, name string, base int, err error) {
	if err == nil {
		return
	}
	var ae *scripting.ArgError
	if errors.As(err, &ae) {
		L.ArgError(base+ae.Arg, ae.Msg)
	}
	var he *scripting.HostError
	if errors.As(err, &he) {
		v.hostErr = he.Err
	}
	L.RaiseError("%s: %s", name, err.Error())
}
