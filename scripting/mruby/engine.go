//go:build cgo && !nomruby

package mruby

/*
#cgo CFLAGS: -I${SRCDIR}/../../build/mruby/include -DMRB_USE_DEBUG_HOOK -DMRB_UTF8_STRING -DMRB_NO_STDIO -O2
#cgo LDFLAGS: ${SRCDIR}/../../build/mruby/lib/libmruby.a -lm
#include <stdlib.h>
#include "hostd_mruby.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime/cgo"
	"strings"
	"time"
	"unsafe"

	"github.com/hostd/hostd/scripting"
)

// Defaults for a zero Config, and when a VM is recycled.
const (
	DefaultTimeout  = scripting.DefaultTimeout
	DefaultMaxInput = scripting.DefaultMaxInput
	DefaultMaxMem   = scripting.DefaultMaxMemory
	DefaultMaxVMs   = scripting.DefaultMaxVMs

	// A VM is closed and replaced after maxRuns runs, or once runs have
	// interned maxNewSyms symbols (mruby never frees symbols).
	maxRuns    = 10000
	maxNewSyms = 20000
	// maxKeptOut bounds the host call result buffer a VM keeps.
	maxKeptOut = 64 << 10
)

// cgoDefines are the -D flags of the #cgo CFLAGS line above; they must be
// those libmruby was built with (build/mruby/cflags, checked by a test and,
// at VM creation, by comparing sizeof(mrb_state)).
const cgoDefines = "-DMRB_USE_DEBUG_HOOK -DMRB_UTF8_STRING -DMRB_NO_STDIO"

// Available reports whether mruby is built in.
const Available = true

// Engine runs mruby hooks for one tenant. It implements scripting.Engine
// and is safe for concurrent use; each Run uses its own mrb_state from the
// engine's pool, and no mrb_state is shared with another engine.
type Engine struct {
	cfg scripting.Config

	// scripts may be shared with other engines of the tenant (Config.Scripts):
	// versions come from it, so a VM never mistakes another engine's
	// version for its own.
	scripts *scripting.ScriptCache[script]

	pool *scripting.VMPool[*vm]
}

// script is the current source of a hook file and its version; each VM
// compiles it once per version.
type script struct {
	src     []byte
	version uint64
}

// vm is one mrb_state with its compiled procs, used by one goroutine at a
// time.
type vm struct {
	c     *C.hostd_vm
	procs map[string]*proc
	runs  int
	// rs is the state of the current run, reached from C through h (made
	// once per VM, so a run allocates neither).
	rs runState
	h  cgo.Handle
}

type proc struct {
	p       *C.struct_RProc
	file    *C.char // the name it was compiled with; freed with the VM
	version uint64
	// lastReturn is 1 when the script's last statement is `return`.
	lastReturn C.int
}

var _ scripting.Engine = (*Engine)(nil)

// New returns an engine for one tenant. Zero fields of cfg take their
// defaults (see scripting.Config). VMs are made on first use.
func New(cfg scripting.Config) *Engine {
	cfg = cfg.WithDefaults()
	return &Engine{
		cfg:     cfg,
		scripts: scripting.CacheFor[script](cfg.Scripts, "mruby"),
		pool:    scripting.NewVMPool(cfg.MaxVMs, (*vm).close),
	}
}

// Run runs the hook file path in phase for req; see scripting.Engine.
func (e *Engine) Run(ctx context.Context, phase scripting.Phase, path string, req scripting.Request) (scripting.Result, error) {
	if e.pool.Closed() {
		return scripting.Result{}, errors.New("mruby: engine is closed")
	}
	if err := ctx.Err(); err != nil {
		return scripting.Result{}, fmt.Errorf("mruby: %w", err)
	}
	v, err := e.getVM()
	if err != nil {
		return scripting.Result{}, err
	}
	p, err := e.load(path, v)
	if err != nil {
		e.putVM(v)
		return scripting.Result{}, err
	}
	timeout := e.cfg.Limits.Timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	rs := &v.rs
	*rs = runState{e: e, ctx: ctx, phase: phase, path: path, req: req, out: rs.out}
	// rs is reset below, before v goes back to the pool.
	var res C.hostd_result
	C.hostd_vm_run(v.c, p.p, p.lastReturn, p.file, C.int64_t(timeout), C.uintptr_t(v.h), &res)
	v.runs++

	var out scripting.Result
	reuse := true
	switch res.kind {
	case C.HOSTD_OK:
		out.Status = int(res.status)
	case C.HOSTD_TIMEOUT:
		reuse = false
		err = &scripting.ScriptError{File: path, Msg: fmt.Sprintf("hook exceeded its time limit (%v)", timeout), Err: scripting.ErrTimeout}
	case C.HOSTD_NOMEM:
		reuse = false
		err = &scripting.ScriptError{File: path, Msg: fmt.Sprintf("hook exceeded its memory limit (%d bytes)", e.cfg.Limits.MaxMemory), Err: scripting.ErrMemory}
	case C.HOSTD_BADRET:
		what := fmt.Sprint(int64(res.status))
		if res.msg != nil {
			what = stripAnon(C.GoString(res.msg))
		}
		err = &scripting.ScriptError{File: path, Msg: fmt.Sprintf("hook returned %s, which is not an HTTP status (an Integer from 100 to 999); use `return` or nil to continue", what)}
	default:
		msg := "exception"
		if res.msg != nil {
			msg = stripAnon(C.GoString(res.msg))
		}
		err = &scripting.ScriptError{File: path, Line: int(res.line), Msg: msg, Err: rs.hostErr}
	}
	if res.msg != nil {
		C.free(unsafe.Pointer(res.msg))
	}
	// Nothing of a request survives in the pooled VM but the result
	// buffer, and that only when small.
	buf := rs.out[:0]
	if cap(buf) > maxKeptOut {
		buf = nil
	}
	*rs = runState{out: buf}
	if C.hostd_vm_exceeded(v.c) != 0 {
		reuse = false
	}
	if reuse && (v.runs >= maxRuns || C.hostd_vm_new_syms(v.c) >= maxNewSyms) {
		reuse = false
	}
	if reuse {
		e.putVM(v)
	} else {
		v.close()
	}
	return out, err
}

// Check compiles path without running it and returns a
// *scripting.ScriptError for a syntax error.
func (e *Engine) Check(path string) error {
	src, err := scripting.ReadScript(path)
	if err != nil {
		return err
	}
	v, err := e.getVM()
	if err != nil {
		return err
	}
	p, err := v.compile(path, src, 0)
	if err == nil {
		v.release(p)
	}
	e.putVM(v)
	return err
}

// Close frees the idle VMs. Run must not be called after Close; VMs of
// runs still in progress are freed when they end.
func (e *Engine) Close() error {
	e.pool.Close()
	return nil
}

func (e *Engine) getVM() (*vm, error) {
	if v, ok := e.pool.Get(); ok {
		return v, nil
	}
	return newVM(e.cfg.Limits.MaxMemory)
}

func (e *Engine) putVM(v *vm) { e.pool.Put(v) }

func newVM(maxMem int64) (*vm, error) {
	var cerr *C.char
	c := C.hostd_vm_new(C.size_t(maxMem), &cerr)
	if c == nil {
		msg := "out of memory"
		if cerr != nil {
			msg = C.GoString(cerr)
			C.free(unsafe.Pointer(cerr))
		}
		return nil, fmt.Errorf("mruby: new VM: %s", msg)
	}
	v := &vm{c: c, procs: make(map[string]*proc)}
	v.h = cgo.NewHandle(&v.rs)
	return v, nil
}

func (v *vm) close() {
	C.hostd_vm_free(v.c)
	v.h.Delete()
	for _, p := range v.procs {
		C.free(unsafe.Pointer(p.file))
	}
	v.c, v.procs = nil, nil
}

// compile compiles src as path; a syntax error is a *scripting.ScriptError
// with the line.
func (v *vm) compile(path string, src []byte, version uint64) (*proc, error) {
	file := C.CString(path)
	var (
		p    *C.struct_RProc
		last C.int
		line C.int
		msg  *C.char
	)
	var srcp *C.char
	if len(src) > 0 {
		srcp = (*C.char)(unsafe.Pointer(unsafe.SliceData(src)))
	}
	rc := C.hostd_vm_compile(v.c, srcp, C.size_t(len(src)), file, &p, &last, &line, &msg)
	if rc != 0 {
		C.free(unsafe.Pointer(file))
		m := "compile error"
		if msg != nil {
			m = C.GoString(msg)
			C.free(unsafe.Pointer(msg))
		}
		if rc == 1 {
			m = "syntax error: " + m
		}
		return nil, &scripting.ScriptError{File: path, Line: int(line), Msg: m}
	}
	return &proc{p: p, file: file, version: version, lastReturn: last}, nil
}

func (v *vm) release(p *proc) {
	C.hostd_vm_release(v.c, p.p)
	C.free(unsafe.Pointer(p.file))
}

// load returns v's compiled proc of path's current version. The file is
// re-read when its modification time or size changed; a new version that
// does not compile (or cannot be read) is logged once and the old one
// stays in use.
func (e *Engine) load(path string, v *vm) (*proc, error) {
	s, err := e.scripts.Load(path, e.cfg.Logger, "mruby", func() (script, error) {
		src, err := scripting.ReadScript(path)
		if err != nil {
			return script{}, err
		}
		version := e.scripts.NextVersion()
		p, err := v.compile(path, src, version)
		if err != nil {
			return script{}, err
		}
		v.install(path, p)
		return script{src: src, version: version}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.procFor(path, s.src, s.version)
}

// procFor returns the proc of path at version, compiling src on v when v
// has another version (or none).
func (v *vm) procFor(path string, src []byte, version uint64) (*proc, error) {
	if p := v.procs[path]; p != nil && p.version == version {
		return p, nil
	}
	p, err := v.compile(path, src, version)
	if err != nil {
		return nil, err
	}
	v.install(path, p)
	return p, nil
}

// install makes p v's proc of path, releasing the one it replaces.
func (v *vm) install(path string, p *proc) {
	if old := v.procs[path]; old != nil {
		v.release(old)
	}
	v.procs[path] = p
}

// stripAnon removes the name of a run's anonymous top-level class
// ("#<Class:0x55d0c0>::") from messages: the hook's Foo is shown as Foo.
func stripAnon(s string) string {
	const prefix = "#<Class:0x"
	for {
		i := strings.Index(s, prefix)
		if i < 0 {
			return s
		}
		j := i + len(prefix)
		for j < len(s) && strings.IndexByte("0123456789abcdef", s[j]) >= 0 {
			j++
		}
		if !strings.HasPrefix(s[j:], ">::") {
			// Not the anonymous scope: keep it and look further.
			return s[:j] + stripAnon(s[j:])
		}
		s = s[:i] + s[j+3:]
	}
}
