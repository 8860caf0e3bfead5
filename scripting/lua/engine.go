package lua

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	glua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/hostd/hostd/scripting"
)

// Engine runs Lua hooks for one tenant. It implements scripting.Engine and
// is safe for concurrent use; each Run takes a VM from the engine's VMs
// (its own, at most Config.MaxVMs idle ones, or a Pool shared with other
// tenants) and runs on the caller's goroutine, and starts no goroutines or
// timers. A run executes the tenant's compiled bytecode in a fresh
// environment with the tenant's limits, file gate and shared dictionary;
// nothing of it stays in the VM. Errors of a hook (syntax, run time,
// time-out, missing file) are *scripting.ScriptError with the hook's file
// and line; a time-out wraps scripting.ErrTimeout.
type Engine struct {
	cfg     scripting.Config
	scripts *scripting.ScriptCache[*glua.FunctionProto] // shared through Config.Scripts

	pool   *scripting.VMPool[*vm]
	shared bool // pool belongs to a Pool
	closed atomic.Bool
}

var _ scripting.Engine = (*Engine)(nil)

// New returns an engine for one tenant with VMs of its own. Zero fields of
// cfg take their defaults (see scripting.Config).
func New(cfg scripting.Config) *Engine { return engineOf(cfg, nil) }

// Pool is a set of Lua VMs shared by the engines of many tenants (one per
// server, as mod_mruby keeps one interpreter per process): a run takes any
// idle VM, binds it to the tenant for the run and leaves nothing of the
// tenant in it, so a tenant costs its compiled scripts, not VMs. It is
// safe for concurrent use.
type Pool = scripting.SharedPool[*vm, *Engine]

// NewPool returns a pool keeping at most maxIdle idle VMs (default
// scripting.DefaultMaxVMs); more are made while more runs are in progress.
func NewPool(maxIdle int) *Pool { return scripting.NewSharedPool(maxIdle, (*vm).close, engineOf) }

// engineOf makes an engine of its own VMs (pool nil) or of a Pool's.
func engineOf(cfg scripting.Config, pool *scripting.VMPool[*vm]) *Engine {
	e := &Engine{shared: pool != nil}
	e.cfg, e.scripts, e.pool = scripting.EngineParts[*glua.FunctionProto](cfg, "lua", pool, (*vm).close)
	return e
}

// Language returns the Lua hook language (.lua files) for scripting.Engines.
func Language() scripting.Language {
	return scripting.LanguageOf(".lua", New, NewPool)
}

// Run runs the hook file path in phase for req; see scripting.Engine.
func (e *Engine) Run(ctx context.Context, phase scripting.Phase, path string, req scripting.Request) (scripting.Result, error) {
	if e.closed.Load() || e.pool.Closed() {
		return scripting.Result{}, errors.New("lua: engine is closed")
	}
	proto, err := e.load(path)
	if err != nil {
		return scripting.Result{}, err
	}
	v := e.getVM()
	res, err, reuse := v.run(ctx, phase, path, proto, req)
	v.e = nil
	if reuse {
		e.pool.Put(v)
	} else {
		v.close()
	}
	return res, err
}

// Check compiles path without running it and returns a
// *scripting.ScriptError for a syntax error.
func (e *Engine) Check(path string) error {
	_, err := compileFile(e.cfg.FS, path, e.cfg.Limits.MaxScript)
	return err
}

// Close frees the engine's own idle VMs (a shared Pool's stay). Run must
// not be called after Close; VMs of runs still in progress are freed or
// returned when they end.
func (e *Engine) Close() error {
	e.closed.Store(true)
	if !e.shared {
		e.pool.Close()
	}
	return nil
}

// getVM takes an idle VM, or makes one, and binds it to e for one run.
func (e *Engine) getVM() *vm {
	v, ok := e.pool.Get()
	if !ok {
		v = newVM()
	}
	v.e = e
	return v
}

// load returns the compiled proto of path, recompiling it when the file's
// modification time or size changed. A broken new version keeps the old
// proto (logged once per version).
func (e *Engine) load(path string) (*glua.FunctionProto, error) {
	return e.scripts.Load(e.cfg.FS, path, e.cfg.Logger, "lua", func() (*glua.FunctionProto, error) {
		return compileFile(e.cfg.FS, path, e.cfg.Limits.MaxScript)
	})
}

// compileFile parses and compiles a Lua file of at most max bytes read
// through fsys; errors are *scripting.ScriptError with the line.
func compileFile(fsys scripting.FS, path string, max int) (*glua.FunctionProto, error) {
	src, err := scripting.ReadScriptLimit(fsys, path, max)
	if err != nil {
		return nil, err
	}
	return compileSource(path, src)
}

func compileSource(path string, src []byte) (*glua.FunctionProto, error) {
	chunk, err := parse.Parse(bytes.NewReader(src), path)
	if err != nil {
		se := &scripting.ScriptError{File: path, Msg: "syntax error: " + err.Error()}
		var pe *parse.Error
		if errors.As(err, &pe) {
			se.Line = pe.Pos.Line
			se.Msg = "syntax error" + strings.TrimPrefix(pe.Message, "syntax error")
			if !strings.HasPrefix(pe.Message, "syntax error") {
				se.Msg = "syntax error: " + pe.Message
			}
			if se.Line < 1 {
				// gopher-lua reports an error at end of file as line -1.
				se.Line = bytes.Count(src, []byte("\n")) + 1
				se.Msg += " at end of file"
			}
			if pe.Token != "" {
				se.Msg += " near '" + pe.Token + "'"
			}
		}
		return nil, se
	}
	proto, err := glua.Compile(chunk, path)
	if err != nil {
		se := &scripting.ScriptError{File: path, Msg: "compile error: " + err.Error()}
		var ce *glua.CompileError
		if errors.As(err, &ce) {
			se.Line = ce.Line
			se.Msg = "compile error: " + ce.Message
		}
		return nil, se
	}
	// A hook gets no arguments: drop the Lua 5.0 "arg" table that
	// gopher-lua would build for the main chunk on every call.
	proto.IsVarArg &^= glua.VarArgNeedsArg
	shrinkProto(proto)
	return proto, nil
}

// shrinkProto trims the slices of a compiled function and its nested ones
// to their length: gopher-lua's compiler leaves them with the capacity of
// its work buffers (about 16 KB per function, most of a small hook's
// compiled form, kept for as long as the script is cached, per tenant).
func shrinkProto(p *glua.FunctionProto) {
	p.Code = clip(p.Code)
	p.Constants = clip(p.Constants)
	p.FunctionPrototypes = clip(p.FunctionPrototypes)
	p.DbgSourcePositions = clip(p.DbgSourcePositions)
	p.DbgLocals = clip(p.DbgLocals)
	p.DbgCalls = clip(p.DbgCalls)
	p.DbgUpvalues = clip(p.DbgUpvalues)
	for _, c := range p.FunctionPrototypes {
		shrinkProto(c)
	}
}

// clip returns a copy of s with no spare capacity (nil when empty).
func clip[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// scriptError converts a Lua run-time error into a *scripting.ScriptError,
// taking file and line from the "file:line: msg" prefix gopher-lua adds.
func scriptError(path string, err error, cause error) *scripting.ScriptError {
	msg := err.Error()
	var ae *glua.ApiError
	if errors.As(err, &ae) && ae.Object != nil {
		msg = ae.Object.String()
	}
	se := &scripting.ScriptError{File: path, Msg: msg, Err: cause}
	if file, line, rest, ok := splitPosition(msg); ok {
		se.File, se.Line, se.Msg = file, line, rest
	}
	return se
}

// splitPosition splits "file:12: message" into its parts.
func splitPosition(msg string) (file string, line int, rest string, ok bool) {
	for i := 0; i < len(msg); i++ {
		if msg[i] != ':' {
			continue
		}
		j := i + 1
		for j < len(msg) && msg[j] >= '0' && msg[j] <= '9' {
			j++
		}
		if j == i+1 || j >= len(msg) || msg[j] != ':' || i == 0 {
			continue
		}
		n, err := strconv.Atoi(msg[i+1 : j])
		if err != nil {
			continue
		}
		return msg[:i], n, strings.TrimSpace(msg[j+1:]), true
	}
	return "", 0, msg, false
}
