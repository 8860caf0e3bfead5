package lua

import (
	"context"
	"errors"
	"fmt"
	"math"

	glua "github.com/yuin/gopher-lua"

	"github.com/hostd/hostd/scripting"
)

// VM sizes. gopher-lua has no allocator hook, so these bound what they
// can: the call depth and the value stack of one run.
const (
	callStackSize    = 200
	registrySize     = 4 << 10
	registryMaxSize  = 256 << 10
	registryGrowStep = 4 << 10
	// maxCoroutines bounds the coroutines one run may create (each has
	// its own stacks).
	maxCoroutines = 256
	// maxOpenFiles bounds the files one run may have open at once.
	maxOpenFiles = 16
)

// vm is one Lua state with the sandboxed API. It is used by one goroutine
// at a time; for the length of a run it is bound to the running tenant's
// engine (e), and between runs to none: a VM of a Pool serves any tenant,
// and everything a run changes is per run (its globals table, its files,
// its module table) or read-only.
type vm struct {
	e *Engine // the tenant of the current run; nil between runs
	L *glua.LState

	envMT    *glua.LTable // metatable of each run's globals: __index = base
	exitMark *glua.LUserData
	// origFormat is gopher-lua's string.format, called by the bounded one.
	origFormat *glua.LFunction

	reqUD, hinUD, houtUD, varsUD, sessUD *glua.LUserData
	// The JSON sentinels hostd.json_null, hostd.json_empty_array and the
	// list marker hostd.json_array_mt (read-only, shared by every run).
	jsonNull, jsonEmptyArray *glua.LUserData
	jsonArrayMT              *glua.LTable
	cookiesUD                *glua.LUserData // r.cookies (api.go)
	fileMT                   *glua.LTable

	// rc is the run's context (deadline and parent), reused by every run.
	rc runCtx
	// reCache keeps the compiled patterns of hostd.re (tenant-neutral:
	// a pattern compiles the same for everyone).
	reCache scripting.RegexCache

	// Per-run state, reset by end.
	ctx context.Context // &rc during a run, nil between runs
	// api is the hook API of the run (its request, phase and file).
	api        scripting.Hook
	env        *glua.LTable
	exiting    bool
	exitStatus int
	hostErr    error
	body       glua.LValue
	args       *glua.LTable
	loaded     *glua.LTable
	loading    map[string]bool
	files      []*luaFile
	coroutines int
}

func newVM() *vm {
	L := glua.NewState(glua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    callStackSize,
		RegistrySize:     registrySize,
		RegistryMaxSize:  registryMaxSize,
		RegistryGrowStep: registryGrowStep,
	})
	v := &vm{L: L}
	v.rc.closed = make(chan struct{})
	close(v.rc.closed)
	v.exitMark = L.NewUserData()
	v.buildSandbox()
	return v
}

func (v *vm) close() { v.L.Close() }

// run runs proto for req. reuse reports whether the VM may go back to the
// pool (false after a timeout or an internal error).
func (v *vm) run(ctx context.Context, phase scripting.Phase, path string, proto *glua.FunctionProto, req scripting.Request) (res scripting.Result, err error, reuse bool) {
	L := v.L
	v.rc.reset(ctx, v.e.cfg.Limits.Timeout)
	v.ctx = &v.rc
	v.api = scripting.Hook{Config: &v.e.cfg, Req: req, Phase: phase, File: path}
	// A bare table: its hash part is only allocated when the hook sets a
	// global (_G is a proxy in the base, see buildSandbox).
	env := &glua.LTable{Metatable: v.envMT}
	v.env = env
	defer v.end()

	fn := L.NewFunctionFromProto(proto)
	fn.Env = env
	L.SetMemoryLimit(v.e.cfg.Limits.MaxMemory)
	L.SetContext(&v.rc)
	L.Push(fn)
	perr := L.PCall(0, 1, nil)
	L.RemoveContext()
	if perr == nil {
		ret := L.Get(-1)
		L.Pop(1)
		if v.exiting {
			return scripting.Result{Status: v.exitStatus}, nil, true
		}
		switch r := ret.(type) {
		case *glua.LNilType:
			return scripting.Result{}, nil, true
		case glua.LNumber:
			if st, ok := statusCode(r); ok {
				return scripting.Result{Status: st}, nil, true
			}
			return scripting.Result{}, &scripting.ScriptError{File: path, Msg: fmt.Sprintf("hook returned %v, want nothing or a status code 100-999", r)}, true
		default:
			return scripting.Result{}, &scripting.ScriptError{File: path, Msg: fmt.Sprintf("hook returned a %s, want nothing or a status code", ret.Type())}, true
		}
	}
	L.SetTop(0)
	if L.MemoryExceeded() {
		se := scriptError(path, perr, scripting.ErrMemory)
		se.Msg = fmt.Sprintf("hook exceeded its memory limit (%d bytes)", v.e.cfg.Limits.MaxMemory)
		return scripting.Result{}, se, false
	}
	if cerr := v.rc.Err(); cerr != nil {
		if ctx.Err() == nil {
			cerr = scripting.ErrTimeout // our deadline, not the caller's
		}
		se := scriptError(path, perr, cerr)
		se.Msg = cerr.Error()
		return scripting.Result{}, se, false
	}
	if v.exiting {
		return scripting.Result{Status: v.exitStatus}, nil, true
	}
	var ae *glua.ApiError
	reuse = errors.As(perr, &ae) && ae.Type == glua.ApiErrorRun
	return scripting.Result{}, scriptError(path, perr, v.hostErr), reuse
}

// end drops the per-run state so that nothing of a request survives in the
// pooled VM, and closes files the script left open.
func (v *vm) end() {
	for _, f := range v.files {
		if f != nil && f.f != nil {
			f.close()
		}
	}
	clear(v.files)
	v.files = v.files[:0]
	v.ctx, v.env = nil, nil
	v.api = scripting.Hook{}
	v.rc.parent = nil
	v.exiting, v.exitStatus, v.hostErr = false, 0, nil
	if v.loaded != nil {
		v.L.G.Registry.RawSetString(loadedKey, glua.LNil)
	}
	v.body, v.args, v.loaded = nil, nil, nil
	clear(v.loading)
	v.coroutines = 0
	v.L.SetMemoryLimit(0)
	// An error out of a wrapped coroutine leaves gopher-lua's current
	// thread pointing at it.
	v.L.G.CurrentThread = v.L.G.MainThread
}

func statusCode(n glua.LNumber) (int, bool) {
	f := float64(n)
	if f != math.Trunc(f) || f < 100 || f > 999 {
		return 0, false
	}
	return int(f), true
}

// exit ends the run with status: it unwinds the Lua stack with the VM's
// exit marker, which protected calls re-raise.
func (v *vm) exit(L *glua.LState, status int) int {
	v.exiting, v.exitStatus = true, status
	L.Error(v.exitMark, 0)
	return 0
}

// mustUnwind reports whether a protected call must pass its error on: the
// hook called r:exit, went over its memory limit, or the deadline passed.
func (v *vm) mustUnwind() bool {
	return v.exiting || v.L.MemoryExceeded() || (v.ctx != nil && v.ctx.Err() != nil)
}

// protect wraps a protected-call function (pcall, xpcall,
// coroutine.resume) so that it cannot swallow r:exit or a timeout.
func (v *vm) protect(orig *glua.LFunction) glua.LGFunction {
	return func(L *glua.LState) int {
		n := L.GetTop()
		L.Insert(orig, 1)
		L.Call(n, glua.MultRet)
		if v.mustUnwind() {
			if v.exiting {
				L.Error(v.exitMark, 0)
			}
			if L.MemoryExceeded() {
				L.RaiseError("%s", glua.ErrMemoryMsg)
			}
			L.RaiseError("%s", v.ctx.Err().Error())
		}
		return L.GetTop()
	}
}

// wrapSrc is coroutine.wrap in Lua, built on the sandbox's create (which
// gives the thread the run's context) and resume (which passes r:exit and
// time-outs on).
const wrapSrc = `local create, resume, error = ...
local function pass(ok, ...)
  if not ok then error((...), 0) end
  return ...
end
return function(f)
  local co = create(f)
  return function(...) return pass(resume(co, ...)) end
end`
