package lua

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"

	glua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/hostd/hostd/scripting"
)

// Defaults for a zero Config.
const (
	DefaultTimeout  = scripting.DefaultTimeout
	DefaultMaxInput = scripting.DefaultMaxInput
	DefaultMaxMem   = scripting.DefaultMaxMemory
	DefaultMaxVMs   = scripting.DefaultMaxVMs
)

// Engine runs Lua hooks for one tenant. It implements scripting.Engine and
// is safe for concurrent use; each Run uses its own VM from the engine's
// pool (at most Config.MaxVMs idle VMs are kept) on the caller's
// goroutine, and starts no goroutines or timers. Errors of a hook (syntax,
// run time, time-out, missing file) are *scripting.ScriptError with the
// hook's file and line; a time-out wraps scripting.ErrTimeout.
type Engine struct {
	cfg     scripting.Config
	scripts *scripting.ScriptCache[*glua.FunctionProto] // shared through Config.Scripts

	pool *scripting.VMPool[*vm]
}

var _ scripting.Engine = (*Engine)(nil)

// New returns an engine for one tenant. Zero fields of cfg take their
// defaults (see scripting.Config).
func New(cfg scripting.Config) *Engine {
	cfg = cfg.WithDefaults()
	return &Engine{
		cfg:     cfg,
		scripts: scripting.CacheFor[*glua.FunctionProto](cfg.Scripts, "lua"),
		pool:    scripting.NewVMPool(cfg.MaxVMs, func(v *vm) { v.L.Close() }),
	}
}

// Run runs the hook file path in phase for req; see scripting.Engine.
func (e *Engine) Run(ctx context.Context, phase scripting.Phase, path string, req scripting.Request) (scripting.Result, error) {
	if e.pool.Closed() {
		return scripting.Result{}, errors.New("lua: engine is closed")
	}
	proto, err := e.load(path)
	if err != nil {
		return scripting.Result{}, err
	}
	v := e.getVM()
	res, err, reuse := v.run(ctx, phase, path, proto, req)
	if reuse {
		e.putVM(v)
	} else {
		v.L.Close()
	}
	return res, err
}

// Check compiles path without running it and returns a
// *scripting.ScriptError for a syntax error.
func (e *Engine) Check(path string) error {
	_, err := compileFile(path)
	return err
}

// Close frees the idle VMs. Run must not be called after Close; VMs of
// runs still in progress are freed when they end.
func (e *Engine) Close() error {
	e.pool.Close()
	return nil
}

func (e *Engine) getVM() *vm {
	if v, ok := e.pool.Get(); ok {
		return v
	}
	return newVM(e)
}

func (e *Engine) putVM(v *vm) { e.pool.Put(v) }

// load returns the compiled proto of path, recompiling it when the file's
// modification time or size changed. A broken new version keeps the old
// proto (logged once per version).
func (e *Engine) load(path string) (*glua.FunctionProto, error) {
	return e.scripts.Load(path, e.cfg.Logger, "lua", func() (*glua.FunctionProto, error) { return compileFile(path) })
}

// compileFile parses and compiles a Lua file; errors are
// *scripting.ScriptError with the line.
func compileFile(path string) (*glua.FunctionProto, error) {
	src, err := scripting.ReadScript(path)
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
	return proto, nil
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
