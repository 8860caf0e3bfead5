package lua

import (
	"path/filepath"
	"strings"

	glua "github.com/yuin/gopher-lua"
)

const lockedMT = "locked"

// buildSandbox opens the whitelisted libraries and builds the read-only
// base environment that every run's fresh globals table falls through to.
//
// What a hook can reach: the base functions below, the library tables
// string, table, math, coroutine, os (time, clock, date, difftime,
// remove, rename), io (open, lines, type, close), hostd, and require
// (confined to Config.HookDir). Every library table is an empty proxy
// whose __index is the real table, whose __newindex raises an error and
// whose __metatable is locked, so a hook cannot change what the next hook
// sees. getfenv, setfenv, load, loadstring, loadfile, dofile, module,
// rawset, rawget, rawequal, newproxy, collectgarbage, debug and package are
// not there.
func (v *vm) buildSandbox() {
	L := v.L
	for _, lib := range []struct {
		name string
		open glua.LGFunction
	}{
		{glua.BaseLibName, glua.OpenBase},
		{glua.TabLibName, glua.OpenTable},
		{glua.StringLibName, glua.OpenString},
		{glua.MathLibName, glua.OpenMath},
		{glua.CoroutineLibName, glua.OpenCoroutine},
		{glua.OsLibName, glua.OpenOs},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(glua.LString(lib.name))
		L.Call(1, 0)
	}
	v.buildRequest()
	g := L.G.Global
	base := L.NewTable()
	for _, name := range []string{
		"assert", "error", "ipairs", "next", "pairs", "select", "tonumber",
		"tostring", "type", "setmetatable", "getmetatable", "_VERSION",
	} {
		base.RawSetString(name, g.RawGetString(name))
	}
	base.RawSetString("pcall", L.NewFunction(v.protect(g.RawGetString("pcall").(*glua.LFunction))))
	base.RawSetString("xpcall", L.NewFunction(v.protect(g.RawGetString("xpcall").(*glua.LFunction))))
	base.RawSetString("pairs", L.NewFunction(v.pairs(g.RawGetString("pairs").(*glua.LFunction))))
	base.RawSetString("print", L.NewFunction(v.print))
	base.RawSetString("unpack", L.NewFunction(unpack))
	base.RawSetString("require", L.NewFunction(v.require))

	// string: bounded versions of the functions whose work or result
	// can grow beyond their input.
	str := pick(L, g.RawGetString("string").(*glua.LTable),
		"byte", "char", "format", "len", "lower", "reverse", "sub", "upper")
	v.origFormat = str.RawGetString("format").(*glua.LFunction)
	L.SetFuncs(str, map[string]glua.LGFunction{
		"rep": v.strRep, "find": v.strFind, "match": v.strMatch,
		"gmatch": v.strGmatch, "gsub": v.strGsub, "format": v.strFormat,
	})
	strProxy := readOnly(L, str)
	base.RawSetString("string", strProxy)
	// The string metatable: method calls on strings go to the proxy.
	smt := L.NewTable()
	smt.RawSetString("__index", strProxy)
	smt.RawSetString("__metatable", glua.LString(lockedMT))
	L.SetMetatable(glua.LString(""), smt)

	tbl := pick(L, g.RawGetString("table").(*glua.LTable), "getn", "insert", "maxn", "remove")
	tbl.RawSetString("concat", L.NewFunction(v.tableConcat))
	tbl.RawSetString("sort", L.NewFunction(v.tableSort))
	base.RawSetString("table", readOnly(L, tbl))

	base.RawSetString("math", readOnly(L, pick(L, g.RawGetString("math").(*glua.LTable),
		"abs", "acos", "asin", "atan", "atan2", "ceil", "cos", "cosh", "deg", "exp", "floor", "fmod",
		"frexp", "huge", "ldexp", "log", "log10", "max", "min", "mod", "modf", "pi", "pow", "rad",
		"random", "sin", "sinh", "sqrt", "tan", "tanh")))

	co := pick(L, g.RawGetString("coroutine").(*glua.LTable), "create", "resume", "running", "status", "wrap", "yield")
	co.RawSetString("resume", L.NewFunction(v.protect(co.RawGetString("resume").(*glua.LFunction))))
	co.RawSetString("create", L.NewFunction(v.coCreate(co.RawGetString("create").(*glua.LFunction))))
	wrap, err := L.LoadString(wrapSrc)
	if err != nil {
		panic("lua: coroutine.wrap: " + err.Error())
	}
	L.Push(wrap)
	L.Push(co.RawGetString("create"))
	L.Push(co.RawGetString("resume"))
	L.Push(g.RawGetString("error"))
	L.Call(3, 1)
	co.RawSetString("wrap", L.Get(-1))
	L.Pop(1)
	base.RawSetString("coroutine", readOnly(L, co))

	osAll := g.RawGetString("os").(*glua.LTable)
	osT := pick(L, osAll, "time", "clock", "date", "difftime")
	L.SetFuncs(osT, map[string]glua.LGFunction{"remove": v.osRemove, "rename": v.osRename, "date": osDate})
	base.RawSetString("os", readOnly(L, osT))

	base.RawSetString("io", readOnly(L, v.ioLib()))
	base.RawSetString("hostd", readOnly(L, v.hostdLib()))

	// Nothing may reach the unrestricted globals: empty them.
	var keys []glua.LValue
	g.ForEach(func(k, _ glua.LValue) { keys = append(keys, k) })
	for _, k := range keys {
		g.RawSet(k, glua.LNil)
	}

	v.envMT = L.NewTable()
	v.envMT.RawSetString("__index", base)
	v.envMT.RawSetString("__metatable", glua.LString(lockedMT))

	// _G is a proxy to the current run's globals, so a run need not store
	// _G in its fresh table. pairs(_G) sees nothing.
	gproxy := L.NewTable()
	gmt := L.NewTable()
	gmt.RawSetString("__index", L.NewFunction(func(L *glua.LState) int {
		if v.env == nil {
			return 0
		}
		L.Push(L.GetField(v.env, L.CheckString(2)))
		return 1
	}))
	gmt.RawSetString("__newindex", L.NewFunction(func(L *glua.LState) int {
		if v.env != nil {
			v.env.RawSet(L.CheckAny(2), L.Get(3))
		}
		return 0
	}))
	gmt.RawSetString("__metatable", glua.LString(lockedMT))
	gproxy.Metatable = gmt
	base.RawSetString("_G", gproxy)

	// r is one userdata per VM, bound to the current request by run.
	base.RawSetString("r", v.reqUD)
}

// pick returns a new table with the named fields of t (a whitelist: the
// library tables also hold entries such as string.__index and
// string.gfind that must not be reachable).
func pick(L *glua.LState, t *glua.LTable, names ...string) *glua.LTable {
	c := L.CreateTable(0, len(names))
	for _, k := range names {
		val := t.RawGetString(k)
		if val == glua.LNil {
			panic("lua: missing library field " + k)
		}
		c.RawSetString(k, val)
	}
	return c
}

// readOnly returns an empty table that reads through to t and refuses
// writes; its metatable is locked.
func readOnly(L *glua.LState, t *glua.LTable) *glua.LTable {
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(func(L *glua.LState) int {
		L.RaiseError("attempt to modify a read-only table (field %s)", L.Get(2).String())
		return 0
	}))
	mt.RawSetString("__metatable", glua.LString(lockedMT))
	p.Metatable = mt
	return p
}

// coCreate wraps coroutine.create: it bounds the coroutines of a run and
// gives each the run's context (gopher-lua would derive one that a
// runCtx never cancels).
func (v *vm) coCreate(orig *glua.LFunction) glua.LGFunction {
	return func(L *glua.LState) int {
		if v.coroutines >= maxCoroutines {
			L.RaiseError("too many coroutines (limit %d per run)", maxCoroutines)
		}
		v.coroutines++
		L.CheckFunction(1)
		L.SetTop(1)
		L.Insert(orig, 1)
		L.Call(1, 1)
		th, ok := L.Get(-1).(*glua.LState)
		if !ok {
			L.RaiseError("coroutine.create failed")
		}
		th.SetContext(&v.rc)
		return 1
	}
}

// print logs its arguments, tab-separated, at level info.
func (v *vm) print(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	n := L.GetTop()
	parts := make([]string, n)
	for i := 1; i <= n; i++ {
		parts[i-1] = L.ToStringMeta(L.Get(i)).String()
	}
	msg := strings.Join(parts, "\t")
	if len(msg) > v.e.cfg.Limits.MaxInput {
		msg = msg[:v.e.cfg.Limits.MaxInput] // as hostd.log
	}
	v.api.Logger().Info(msg, "hook", v.api.File)
	return 0
}

// require loads module name ("a.b" -> HookDir/a/b.lua) once per run, as a
// chunk in the run's globals. Only files inside Config.HookDir load.
func (v *vm) require(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	name := L.CheckString(1)
	if v.loaded == nil {
		v.loaded = L.NewTable()
		// Where the memory budget's measure of live data sees it.
		L.G.Registry.RawSetString(loadedKey, v.loaded)
	}
	if m := v.loaded.RawGetString(name); m != glua.LNil {
		L.Push(m)
		return 1
	}
	dir := v.e.cfg.HookDir
	if dir == "" {
		L.RaiseError("require is not available: no hook directory is configured")
	}
	if name == "" || strings.ContainsAny(name, "/\\\x00") || strings.HasPrefix(name, ".") ||
		strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		L.ArgError(1, "invalid module name")
	}
	file := filepath.Join(dir, filepath.FromSlash(strings.ReplaceAll(name, ".", "/"))+".lua")
	if v.loading == nil {
		v.loading = make(map[string]bool)
	}
	if v.loading[name] {
		L.RaiseError("module %q requires itself", name)
	}
	if _, err := v.e.cfg.FS.Stat(file); err != nil {
		L.RaiseError("module %q not found in the hook directory", name)
	}
	proto, err := v.e.load(file)
	if err != nil {
		L.RaiseError("module %q: %s", name, err.Error())
	}
	v.loading[name] = true
	fn := L.NewFunctionFromProto(proto)
	fn.Env = v.env
	L.Push(fn)
	L.Push(glua.LString(name))
	L.Call(1, 1)
	delete(v.loading, name)
	m := L.Get(-1)
	if m == glua.LNil {
		m = glua.LTrue
	}
	v.loaded.RawSetString(name, m)
	L.Push(m)
	return 1
}

// loadedKey is the registry key of the run's module table.
const loadedKey = "hostd.loaded"

// maxUnpack bounds the values unpack pushes.
const maxUnpack = 8000

// unpack is unpack(t [, i [, j]]) with a bounded number of results.
func unpack(L *glua.LState) int {
	t := L.CheckTable(1)
	i := L.OptInt(2, 1)
	j := L.OptInt(3, t.Len())
	if i > j {
		return 0
	}
	if j-i >= maxUnpack {
		L.RaiseError("too many results to unpack (limit %d)", maxUnpack)
	}
	for k := i; k <= j; k++ {
		L.Push(t.RawGetInt(k))
	}
	return j - i + 1
}
