package lua

import "unsafe"

// hostd patch: an allocation budget per Lua state (see README.md).
//
// gopher-lua allocates through the Go runtime and has no allocator hook,
// so the budget is an estimate: string results (concatenation and every
// string a Go function returns that is not part of one of its arguments),
// table creation and growth, closures, coroutines and stack growth are
// charged where they happen, before the allocation when its size is known.
// A charge past the limit makes the state measure what it still holds
// (liveMemory): the run fails only when that is over the limit. Once a
// state is over its budget every later charge fails too (the error is
// sticky), so a protected call cannot catch it and go on allocating.

// ErrMemoryMsg is the message of the error a state raises when it goes
// over its memory budget.
const ErrMemoryMsg = "not enough memory (script memory limit exceeded)"

// Estimated sizes, in bytes, of what the charges count.
const (
	memSlot       = 24  // an array slot or register (interface + boxed number)
	memHashEntry  = 112 // a hash key: map entry, keys slice and k2i entry
	memTable      = 96  // an empty table
	memClosure    = 80  // a closure, plus memSlot per upvalue
	memThread     = 32 << 10
	memStringHead = 16
)

// SetMemoryLimit sets the budget, in bytes, of ls and the coroutines that
// share its globals, and resets what was charged so far (for a new run).
// A limit <= 0 turns the accounting off.
func (ls *LState) SetMemoryLimit(limit int64) {
	g := ls.G
	g.memLimit, g.memUsed, g.memExceeded = limit, 0, false
}

// MemoryUsed returns what was charged since the last SetMemoryLimit.
func (ls *LState) MemoryUsed() int64 { return ls.G.memUsed }

// MemoryExceeded reports whether the state went over its budget since the
// last SetMemoryLimit.
func (ls *LState) MemoryExceeded() bool { return ls.G.memExceeded }

// ChargeMemory charges n bytes to the budget and raises the memory error
// when the budget is exceeded (or was before). What is charged only ever
// grows, so when a charge would pass the limit the state first measures
// what it still holds (see liveMemory) and charges that instead: a run
// fails when its live data, not its garbage, would pass the limit.
func (ls *LState) ChargeMemory(n int64) {
	g := ls.G
	if g.memLimit <= 0 {
		return
	}
	if g.memExceeded || n > g.memLimit-g.memUsed && ls.overBudget(n) {
		ls.RaiseError("%s", ErrMemoryMsg)
	}
	g.memUsed += n
}

// CheckMemory raises the memory error, without charging, when n more bytes
// would exceed the budget.
func (ls *LState) CheckMemory(n int64) {
	g := ls.G
	if g.memLimit <= 0 {
		return
	}
	if g.memExceeded || n > g.memLimit-g.memUsed && ls.overBudget(n) {
		ls.RaiseError("%s", ErrMemoryMsg)
	}
}

// overBudget measures the live data and reports (stickily) whether n more
// bytes exceed the limit; otherwise the charge restarts from the live
// size.
func (ls *LState) overBudget(n int64) bool {
	g := ls.G
	live := ls.liveMemory()
	g.memUsed = live
	if n > g.memLimit-live {
		g.memExceeded = true
	}
	return g.memExceeded
}

// liveMemory estimates, with the sizes the charges use, what is reachable
// from the state's roots: the main and current threads (their stacks and
// running functions), the registry, the globals and the metatables of the
// built-in types. It walks iteratively (nesting may be deep).
func (ls *LState) liveMemory() int64 {
	g := ls.G
	var total int64
	seen := make(map[any]struct{})
	var stack []LValue
	// push counts a string at once and queues an object (numbers and
	// booleans are part of the slot that holds them).
	push := func(v LValue) {
		switch x := v.(type) {
		case nil, *LNilType, LNumber, LBool:
		case LString:
			if len(x) >= 64 {
				p := uintptrOf(string(x))
				if _, ok := seen[p]; ok {
					return
				}
				seen[p] = struct{}{}
			}
			total += int64(len(x)) + memStringHead
		default:
			stack = append(stack, v)
		}
	}
	push(g.MainThread)
	push(g.CurrentThread)
	push(g.Registry)
	push(g.Global)
	for _, mt := range g.builtinMts {
		push(mt)
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x := v.(type) {
		case *LTable:
			if _, ok := seen[x]; ok {
				continue
			}
			seen[x] = struct{}{}
			total += memTable + x.memSize()
			push(x.Metatable)
			for _, e := range x.array {
				push(e)
			}
			for i, k := range x.keys {
				if x.hvals == nil {
					break
				}
				if s, ok := k.(LString); ok {
					total += int64(len(s))
				} else {
					push(k)
				}
				push(x.hvals[i])
			}
			for k, e := range x.strdict {
				total += int64(len(k))
				push(e)
			}
			for k, e := range x.dict {
				push(k)
				push(e)
			}
		case *LFunction:
			if _, ok := seen[x]; ok {
				continue
			}
			seen[x] = struct{}{}
			total += memClosure + int64(len(x.Upvalues))*memSlot
			if x.Env != nil {
				push(x.Env)
			}
			for _, uv := range x.Upvalues {
				if uv != nil {
					push(uv.Value())
				}
			}
		case *LUserData:
			if _, ok := seen[x]; ok {
				continue
			}
			seen[x] = struct{}{}
			total += memTable
			if x.Env != nil {
				push(x.Env)
			}
			push(x.Metatable)
		case *LState:
			if x == nil {
				continue
			}
			if _, ok := seen[x]; ok {
				continue
			}
			seen[x] = struct{}{}
			total += memThread + int64(cap(x.reg.array))*memSlot
			if x.Env != nil {
				push(x.Env)
			}
			for _, e := range x.reg.array[:x.reg.top] {
				push(e)
			}
			for i := 0; i < x.stack.Sp(); i++ {
				if fn := x.stack.At(i).Fn; fn != nil {
					push(fn)
				}
			}
		}
	}
	return total
}

// memSize is the charged size of a table's array and hash parts.
func (tb *LTable) memSize() int64 {
	return int64(cap(tb.array))*memSlot + int64(len(tb.keys))*memHashEntry
}

// chargedSet is tb.RawSet (op 0), RawSetString (1) or RawSetInt (2) with
// the table's growth charged; a sparse integer key that would pad the
// array part is checked before the padding is made.
func (ls *LState) chargedSet(tb *LTable, key LValue, skey string, ikey int, value LValue, op int) {
	if ls.G.memLimit <= 0 {
		switch op {
		case 0:
			tb.RawSet(key, value)
		case 1:
			tb.RawSetString(skey, value)
		default:
			tb.RawSetInt(ikey, value)
		}
		return
	}
	before := tb.memSize()
	switch op {
	case 0:
		if n, ok := key.(LNumber); ok && isArrayKey(n) {
			ls.checkPadding(tb, int(n))
		}
		tb.RawSet(key, value)
	case 1:
		tb.RawSetString(skey, value)
	default:
		if ikey >= 1 && ikey < MaxArrayIndex {
			ls.checkPadding(tb, ikey)
		}
		tb.RawSetInt(ikey, value)
	}
	if after := tb.memSize(); after != before {
		ls.ChargeMemory(after - before)
	}
}

func (ls *LState) checkPadding(tb *LTable, index int) {
	if grow := index - cap(tb.array); grow > 0 {
		ls.CheckMemory(int64(grow) * memSlot)
	}
}

// chargeReturns charges the strings a Go function returned that are not
// substrings of its arguments.
func (ls *LState) chargeReturns(argBase, nargs, nret int) {
	top := ls.reg.Top()
	var total int64
	for i := top - nret; i < top; i++ {
		s, ok := ls.reg.array[i].(LString)
		if !ok || len(s) < 64 || ls.isArgString(s, argBase, nargs) {
			continue
		}
		total += int64(len(s)) + memStringHead
	}
	if total > 0 {
		ls.ChargeMemory(total)
	}
}

func (ls *LState) isArgString(s LString, argBase, nargs int) bool {
	p := uintptrOf(string(s))
	for i := argBase; i < argBase+nargs && i < ls.reg.Top(); i++ {
		a, ok := ls.reg.array[i].(LString)
		if !ok || len(a) == 0 {
			continue
		}
		ap := uintptrOf(string(a))
		if p >= ap && p+uintptr(len(s)) <= ap+uintptr(len(a)) {
			return true
		}
	}
	return false
}

// uintptrOf returns the address of the bytes of s.
func uintptrOf(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }
