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
	"math/rand/v2"
	"runtime/cgo"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hostd/hostd/scripting"
)

// Limits of one VM's life and of what it keeps.
const (
	// A VM is closed and replaced after maxRuns runs, or once runs have
	// interned maxNewSyms symbols (mruby never frees symbols).
	maxRuns    = 10000
	maxNewSyms = 20000
	// maxKeptOut bounds the host call result buffer a VM keeps.
	maxKeptOut = 64 << 10
	// maxProcs bounds the scripts a VM keeps loaded (the oldest loaded
	// goes first); a VM of a Pool serves many tenants.
	maxProcs = 64
	// vmCreateLimit is the memory limit of making a VM; each run then
	// gets its tenant's Limits.MaxMemory on top of what the VM holds.
	vmCreateLimit = 64 << 20
)

// cgoDefines are the -D flags of the #cgo CFLAGS line above; they must be
// those libmruby was built with (build/mruby/cflags, checked by a test and,
// at VM creation, by comparing sizeof(mrb_state)).
const cgoDefines = "-DMRB_USE_DEBUG_HOOK -DMRB_UTF8_STRING -DMRB_NO_STDIO"

// Available reports whether mruby is built in.
const Available = true

// Engine runs mruby hooks for one tenant. It implements scripting.Engine
// and is safe for concurrent use. A hook is compiled once per file version
// into bytecode the engine keeps; each Run takes an mrb_state from the
// engine's VMs (its own, or a Pool shared with other tenants), loads the
// bytecode there unless that VM has it already, and runs it in a fresh
// anonymous top-level class and self with the tenant's limits; globals are
// reset and the default Random reseeded after it, and the core classes and
// the objects of their constants are frozen, so no run can change what the
// next one (of any tenant) sees.
type Engine struct {
	cfg scripting.Config
	// scripts may be shared with the tenant's other engines, across
	// reloads (Config.Scripts).
	scripts *scripting.ScriptCache[*script]

	pool   *scripting.VMPool[*vm]
	shared bool // pool belongs to a Pool
	closed atomic.Bool
	// failFrom, when above 0, makes the failFrom-th allocation of the
	// next run and every later one fail as at the memory limit (tests of
	// libmruby's allocation failure paths; see child_test.go).
	failFrom atomic.Int64
}

// script is one compiled version of a hook file. VMs key the scripts they
// have loaded by its address: a script object is never shared by two
// tenants, and no other script can take its address while a VM holds it.
type script struct {
	bin        []byte // RITE bytecode with line numbers
	lastReturn C.int  // 1 when the script's last statement is `return`
}

// vm is one mrb_state with the scripts it has loaded, used by one
// goroutine at a time.
type vm struct {
	c     *C.hostd_vm
	procs map[*script]*proc
	fifo  []*script // the keys of procs, oldest loaded first
	runs  int
	// pinned is the proc of the run in progress, which install never
	// releases.
	pinned *proc
	// rs is the state of the current run, reached from C through h (made
	// once per VM, so a run allocates neither).
	rs runState
	h  cgo.Handle
	// re keeps the compiled patterns of Regexp (tenant-neutral: a
	// pattern compiles the same for everyone).
	re scripting.RegexCache
	// budget is the memory limit of the run in progress (Engine.Run);
	// budgetSet: applied already, before a compile or load for it.
	budget    C.size_t
	budgetSet bool
}

// applyBudget sets the run's memory limit before C work that allocates for
// it (a compile or a load of the hook), once per run.
func (v *vm) applyBudget() {
	if !v.budgetSet {
		C.hostd_vm_budget(v.c, v.budget)
		v.budgetSet = true
	}
}

type proc struct {
	p          *C.struct_RProc
	file       *C.char // the name it was compiled with; freed with the proc
	lastReturn C.int
}

var _ scripting.Engine = (*Engine)(nil)

// New returns an engine for one tenant with mrb_states of its own (at
// most Config.MaxVMs idle ones). Zero fields of cfg take their defaults
// (see scripting.Config). VMs are made on first use.
func New(cfg scripting.Config) *Engine { return engineOf(cfg, nil) }

// Pool is a set of mrb_states shared by the engines of many tenants (one
// per server, as mod_mruby keeps one interpreter per process): a tenant
// costs its compiled bytecode, not VMs. It is safe for concurrent use.
type Pool = scripting.SharedPool[*vm, *Engine]

// NewPool returns a pool keeping at most maxIdle idle VMs (default
// scripting.DefaultMaxVMs); more are made while more runs are in progress.
func NewPool(maxIdle int) *Pool { return scripting.NewSharedPool(maxIdle, (*vm).close, engineOf) }

// engineOf makes an engine of its own VMs (pool nil) or of a Pool's.
func engineOf(cfg scripting.Config, pool *scripting.VMPool[*vm]) *Engine {
	e := &Engine{shared: pool != nil}
	e.cfg, e.scripts, e.pool = scripting.EngineParts[*script](cfg, "mruby", pool, (*vm).close)
	return e
}

// Language returns the mruby hook language (.rb files) for scripting.Engines.
func Language() scripting.Language {
	return scripting.LanguageOf(".rb", New, NewPool)
}

// Run runs the hook file path in phase for req; see scripting.Engine.
func (e *Engine) Run(ctx context.Context, phase scripting.Phase, path string, req scripting.Request) (scripting.Result, error) {
	if e.closed.Load() || e.pool.Closed() {
		return scripting.Result{}, errors.New("mruby: engine is closed")
	}
	if err := ctx.Err(); err != nil {
		return scripting.Result{}, fmt.Errorf("mruby: %w", err)
	}
	v, err := e.getVM()
	if err != nil {
		return scripting.Result{}, err
	}
	// The tenant's memory limit, on top of what the VM holds: set before
	// a compile or load of the hook (v.budget), else by hostd_vm_run.
	v.budget, v.budgetSet = C.size_t(e.cfg.Limits.MaxMemory), false
	p, err := e.load(path, v)
	if err != nil {
		e.pool.Put(v)
		return scripting.Result{}, err
	}
	timeout := e.cfg.Limits.Timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	rs := &v.rs
	*rs = runState{e: e, ctx: ctx, api: scripting.Hook{Config: &e.cfg, Req: req, Phase: phase, File: path}, out: rs.out, re: &v.re,
		deadline: time.Now().Add(timeout), vm: v, files: rs.files}
	v.pinned = p // require_relative must not evict the running hook's proc
	// rs is reset below, before v goes back to the pool.
	var res C.hostd_result
	setBudget := C.int(1)
	if v.budgetSet {
		setBudget = 0
	}
	failFrom := max(e.failFrom.Swap(0), 0)
	// One cgo call per run: the budget, the test hook failFrom, and the
	// VM's state afterwards (res.exceeded, res.new_syms) go with it.
	C.hostd_vm_run(v.c, p.p, p.lastReturn, p.file, C.int64_t(timeout), C.uintptr_t(v.h), C.uint64_t(rand.Uint64()),
		setBudget, v.budget, C.size_t(failFrom), &res)
	v.budgetSet = false
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
	rs.closeFiles()
	*rs = runState{out: buf, files: rs.files}
	v.pinned = nil
	if res.exceeded != 0 {
		reuse = false
	}
	if reuse && (v.runs >= maxRuns || res.new_syms >= maxNewSyms) {
		reuse = false
	}
	if reuse {
		e.pool.Put(v)
	} else {
		v.close()
	}
	return out, err
}

// Check compiles path without running it and returns a
// *scripting.ScriptError for a syntax error.
func (e *Engine) Check(path string) error {
	src, err := scripting.ReadScriptLimit(e.cfg.FS, path, e.cfg.Limits.MaxScript)
	if err != nil {
		return err
	}
	v, err := e.getVM()
	if err != nil {
		return err
	}
	p, err := v.compile(path, src, e.cfg.Limits.Timeout)
	if err == nil {
		v.release(p)
	}
	e.pool.Put(v)
	return err
}

// Close frees the engine's own idle VMs (a shared Pool's stay; the
// tenant's loaded scripts leave them as other scripts are loaded). Run
// must not be called after Close; VMs of runs still in progress are freed
// or returned when they end.
func (e *Engine) Close() error {
	e.closed.Store(true)
	if !e.shared {
		e.pool.Close()
	}
	return nil
}

func (e *Engine) getVM() (*vm, error) {
	if v, ok := e.pool.Get(); ok {
		return v, nil
	}
	return newVM(vmCreateLimit)
}

func newVM(maxMem int64) (*vm, error) {
	var cerr *C.char
	c := C.hostd_vm_new(C.size_t(maxMem), (*C.char)(unsafe.Pointer(unsafe.StringData(prelude))), C.size_t(len(prelude)), &cerr)
	if c == nil {
		msg := "out of memory"
		if cerr != nil {
			msg = C.GoString(cerr)
			C.free(unsafe.Pointer(cerr))
		}
		return nil, fmt.Errorf("mruby: new VM: %s", msg)
	}
	v := &vm{c: c, procs: make(map[*script]*proc)}
	v.h = cgo.NewHandle(&v.rs)
	return v, nil
}

func (v *vm) close() {
	C.hostd_vm_free(v.c)
	v.h.Delete()
	for _, p := range v.procs {
		C.free(unsafe.Pointer(p.file))
	}
	v.c, v.procs, v.fifo = nil, nil, nil
}

// compile compiles src as path within timeout; a syntax error is a
// *scripting.ScriptError with the line, a compile that takes longer than
// timeout one wrapping scripting.ErrTimeout.
func (v *vm) compile(path string, src []byte, timeout time.Duration) (*proc, error) {
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
	rc := C.hostd_vm_compile(v.c, srcp, C.size_t(len(src)), file, C.int64_t(timeout), &p, &last, &line, &msg)
	if rc != 0 {
		C.free(unsafe.Pointer(file))
		m := "compile error"
		if msg != nil {
			m = C.GoString(msg)
			C.free(unsafe.Pointer(msg))
		}
		if rc == 3 {
			return nil, &scripting.ScriptError{File: path, Msg: fmt.Sprintf("hook exceeded its time limit (%v) while compiling", timeout), Err: scripting.ErrTimeout}
		}
		if rc == 1 {
			m = "syntax error: " + m
		}
		return nil, &scripting.ScriptError{File: path, Line: int(line), Msg: m}
	}
	return &proc{p: p, file: file, lastReturn: last}, nil
}

// dump returns p's bytecode.
func (v *vm) dump(path string, p *proc) ([]byte, error) {
	var bin *C.uint8_t
	var n C.size_t
	if C.hostd_vm_dump(v.c, p.p, &bin, &n) != 0 {
		return nil, &scripting.ScriptError{File: path, Msg: "cannot store the compiled script (out of memory?)"}
	}
	defer C.free(unsafe.Pointer(bin))
	return C.GoBytes(unsafe.Pointer(bin), C.int(n)), nil
}

func (v *vm) release(p *proc) {
	C.hostd_vm_release(v.c, p.p)
	C.free(unsafe.Pointer(p.file))
}

// load returns v's proc of path's current version. The file is compiled
// once per version (on whichever VM the run has) into bytecode the
// tenant's script cache keeps; a VM without it loads the bytecode. A new version that does not
// compile (or cannot be read) is logged once and the old one stays in use.
func (e *Engine) load(path string, v *vm) (*proc, error) {
	s, err := e.scripts.Load(e.cfg.FS, path, e.cfg.Logger, "mruby", func() (*script, error) {
		src, err := scripting.ReadScriptLimit(e.cfg.FS, path, e.cfg.Limits.MaxScript)
		if err != nil {
			return nil, err
		}
		v.applyBudget()
		p, err := v.compile(path, src, e.cfg.Limits.Timeout)
		if err != nil {
			return nil, err
		}
		bin, err := v.dump(path, p)
		if err != nil {
			v.release(p)
			return nil, err
		}
		s := &script{bin: bin, lastReturn: p.lastReturn}
		v.install(s, p)
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	return v.procFor(path, s)
}

// procFor returns v's proc of s, loading s's bytecode when v lacks it.
func (v *vm) procFor(path string, s *script) (*proc, error) {
	if p := v.procs[s]; p != nil {
		return p, nil
	}
	var cp *C.struct_RProc
	bin := (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(s.bin)))
	v.applyBudget()
	if C.hostd_vm_load(v.c, bin, C.size_t(len(s.bin)), &cp) != 0 {
		return nil, &scripting.ScriptError{File: path, Msg: "cannot load the compiled script (out of memory?)"}
	}
	p := &proc{p: cp, file: C.CString(path), lastReturn: s.lastReturn}
	v.install(s, p)
	return p, nil
}

// install makes p v's proc of script s, releasing the oldest loaded one
// when v has maxProcs.
func (v *vm) install(s *script, p *proc) {
	if len(v.fifo) >= maxProcs {
		i := 0
		if v.procs[v.fifo[0]] == v.pinned {
			i = 1
		}
		old := v.fifo[i]
		v.fifo = append(v.fifo[:i], v.fifo[i+1:]...)
		v.release(v.procs[old])
		delete(v.procs, old)
	}
	v.procs[s] = p
	v.fifo = append(v.fifo, s)
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
