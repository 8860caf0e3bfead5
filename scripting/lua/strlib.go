package lua

import (
	"sort"
	"strings"

	glua "github.com/yuin/gopher-lua"
)

// The string functions below replace gopher-lua's where the work or the
// result can grow beyond the input: the deadline is only checked between
// VM instructions, so a host function must bound itself. Results are
// limited to maxString bytes; pattern matching is a Lua 5.1 matcher that
// checks the deadline every few thousand steps and bounds its recursion.

// maxString is the longest string a host function may build.
func (v *vm) maxString() int {
	m := int(v.e.cfg.Limits.MaxMemory / 4)
	if m < v.e.cfg.Limits.MaxInput {
		m = v.e.cfg.Limits.MaxInput
	}
	return m
}

func (v *vm) strRep(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || s == "" {
		L.Push(glua.LString(""))
		return 1
	}
	if n > v.maxString()/len(s) {
		L.RaiseError("string.rep: result would exceed %d bytes", v.maxString())
	}
	L.CheckMemory(int64(n) * int64(len(s)))
	L.Push(glua.LString(strings.Repeat(s, n)))
	return 1
}

// strFormat bounds string.format by an estimate of its result: the format,
// the arguments and every number in the format (widths, precisions).
func (v *vm) strFormat(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	format := L.CheckString(1)
	est := len(format)
	quote := 1
	if strings.Contains(format, "%q") {
		quote = 4 // %q may escape a byte as \xNN
	}
	for i := 2; i <= L.GetTop(); i++ {
		est += quote*len(L.ToStringMeta(L.Get(i)).String()) + 24
	}
	num := 0
	for i := 0; i < len(format); i++ {
		if c := format[i]; c >= '0' && c <= '9' {
			if num < 1<<30 {
				num = num*10 + int(c-'0')
			}
		} else {
			est += num
			num = 0
		}
	}
	est += num
	if est > v.maxString() {
		L.RaiseError("string.format: result would exceed %d bytes", v.maxString())
	}
	L.CheckMemory(int64(est))
	L.Insert(v.origFormat, 1)
	L.Call(L.GetTop()-1, 1)
	return 1
}

// tableConcat is table.concat(t [, sep [, i [, j]]]) with a bounded result.
func (v *vm) tableConcat(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	t := L.CheckTable(1)
	sep := L.OptString(2, "")
	i := L.OptInt(3, 1)
	j := L.OptInt(4, t.Len())
	if i > j {
		L.Push(glua.LString(""))
		return 1
	}
	max := v.maxString()
	total := 0
	for k := i; k <= j; k++ {
		switch e := t.RawGetInt(k).(type) {
		case glua.LString:
			total += len(e)
		case glua.LNumber:
			total += len(e.String())
		default:
			L.RaiseError("table.concat: invalid value (at index %d) in table for 'concat'", k)
		}
		if k < j {
			total += len(sep)
		}
		if total > max {
			L.RaiseError("table.concat: result would exceed %d bytes", max)
		}
	}
	L.CheckMemory(int64(total))
	var b strings.Builder
	b.Grow(total)
	for k := i; k <= j; k++ {
		b.WriteString(t.RawGetInt(k).String())
		if k < j {
			b.WriteString(sep)
		}
	}
	L.Push(glua.LString(b.String()))
	return 1
}

// tableSort is table.sort(t [, comp]) on t[1..#t], checking the deadline
// every stepsPerCheck comparisons (gopher-lua's sorts without looking at
// the clock: seconds for a few million elements).
func (v *vm) tableSort(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	t := L.CheckTable(1)
	var comp *glua.LFunction
	if L.GetTop() >= 2 && L.Get(2) != glua.LNil {
		comp = L.CheckFunction(2)
	}
	n := t.Len()
	L.CheckMemory(int64(n) * 16)
	vals := make([]glua.LValue, n)
	for i := range vals {
		vals[i] = t.RawGetInt(i + 1)
	}
	steps := 0
	sort.Slice(vals, func(i, j int) bool {
		steps++
		if steps%stepsPerCheck == 0 && v.ctx != nil && v.ctx.Err() != nil {
			L.RaiseError("%s", v.ctx.Err().Error())
		}
		if comp == nil {
			return L.LessThan(vals[i], vals[j])
		}
		L.Push(comp)
		L.Push(vals[i])
		L.Push(vals[j])
		L.Call(2, 1)
		less := L.ToBool(-1)
		L.Pop(1)
		return less
	})
	for i, x := range vals {
		t.RawSetInt(i+1, x)
	}
	return 0
}

const specials = "^$*+?.([%-"

func posrelat(pos, n int) int {
	if pos < 0 {
		pos += n + 1
	}
	return pos
}

func (v *vm) strFind(L *glua.LState) int  { return v.findAux(L, true) }
func (v *vm) strMatch(L *glua.LState) int { return v.findAux(L, false) }

func (v *vm) findAux(L *glua.LState, find bool) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	s := L.CheckString(1)
	p := L.CheckString(2)
	init := posrelat(L.OptInt(3, 1), len(s)) - 1
	if init < 0 {
		init = 0
	} else if init > len(s) {
		init = len(s)
	}
	if find && (L.ToBool(4) || !strings.ContainsAny(p, specials)) {
		if i := strings.Index(s[init:], p); i >= 0 {
			L.Push(glua.LNumber(init + i + 1))
			L.Push(glua.LNumber(init + i + len(p)))
			return 2
		}
		L.Push(glua.LNil)
		return 1
	}
	ms := &matchState{L: L, v: v, src: s, pat: p}
	pi := 0
	anchor := len(p) > 0 && p[0] == '^'
	if anchor {
		pi = 1
	}
	for s1 := init; ; s1++ {
		ms.level = 0
		if e := ms.match(s1, pi); e != -1 {
			if find {
				L.Push(glua.LNumber(s1 + 1))
				L.Push(glua.LNumber(e))
				return ms.pushCaptures(-1, -1, false) + 2
			}
			return ms.pushCaptures(s1, e, true)
		}
		if anchor || s1 >= len(s) {
			break
		}
	}
	L.Push(glua.LNil)
	return 1
}

func (v *vm) strGmatch(L *glua.LState) int {
	s := L.CheckString(1)
	p := L.CheckString(2)
	pos := 0
	L.Push(L.NewFunction(func(L *glua.LState) int {
		ms := &matchState{L: L, v: v, src: s, pat: p}
		for src := pos; src <= len(s); src++ {
			ms.level = 0
			if e := ms.match(src, 0); e != -1 {
				pos = e
				if e == src {
					pos++
				}
				return ms.pushCaptures(src, e, true)
			}
		}
		pos = len(s) + 1
		return 0
	}))
	return 1
}

func (v *vm) strGsub(L *glua.LState) int {
	v.rc.poke() // may be slow: check the deadline at the next instruction
	s := L.CheckString(1)
	p := L.CheckString(2)
	repl := L.Get(3)
	switch repl.Type() {
	case glua.LTString, glua.LTNumber, glua.LTTable, glua.LTFunction:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	maxN := L.OptInt(4, len(s)+1)
	anchor := len(p) > 0 && p[0] == '^'
	pi := 0
	if anchor {
		pi = 1
	}
	ms := &matchState{L: L, v: v, src: s, pat: p}
	var b strings.Builder
	limit := v.maxString()
	src, n := 0, 0
	for n < maxN {
		ms.level = 0
		e := ms.match(src, pi)
		if e != -1 {
			n++
			ms.addValue(&b, src, e, repl)
		}
		if e != -1 && e > src {
			src = e
		} else if src < len(s) {
			b.WriteByte(s[src])
			src++
		} else {
			break
		}
		if b.Len() > limit {
			L.RaiseError("string.gsub: result would exceed %d bytes", limit)
		}
		if b.Len() > b.Cap()/2 {
			L.CheckMemory(int64(b.Cap()))
		}
		if anchor {
			break
		}
	}
	b.WriteString(s[src:])
	if b.Len() > limit {
		L.RaiseError("string.gsub: result would exceed %d bytes", limit)
	}
	L.Push(glua.LString(b.String()))
	L.Push(glua.LNumber(n))
	return 2
}

// The Lua 5.1 pattern matcher.

const (
	maxCaptures   = 32
	maxMatchDepth = 200
	capUnfinished = -1
	capPosition   = -2
	stepsPerCheck = 4096
)

type matchState struct {
	L       *glua.LState
	v       *vm
	src     string
	pat     string
	level   int
	depth   int
	steps   int
	capture [maxCaptures]struct{ init, len int }
}

// step counts work and checks the deadline every stepsPerCheck steps.
func (ms *matchState) step() {
	ms.steps++
	if ms.steps%stepsPerCheck == 0 && ms.v.ctx != nil && ms.v.ctx.Err() != nil {
		ms.L.RaiseError("%s", ms.v.ctx.Err().Error())
	}
}

func (ms *matchState) classEnd(p int) int {
	pat := ms.pat
	c := pat[p]
	p++
	switch c {
	case '%':
		if p >= len(pat) {
			ms.L.RaiseError("malformed pattern (ends with '%%')")
		}
		return p + 1
	case '[':
		if p < len(pat) && pat[p] == '^' {
			p++
		}
		for {
			if p >= len(pat) {
				ms.L.RaiseError("malformed pattern (missing ']')")
			}
			c := pat[p]
			p++
			if c == '%' && p < len(pat) {
				p++
			}
			if p >= len(pat) {
				ms.L.RaiseError("malformed pattern (missing ']')")
			}
			if pat[p] == ']' {
				return p + 1
			}
		}
	}
	return p
}

func isalpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isdigit(c byte) bool { return c >= '0' && c <= '9' }
func islower(c byte) bool { return c >= 'a' && c <= 'z' }
func isupper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isspace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
func iscntrl(c byte) bool { return c < ' ' || c == 0x7f }
func ispunct(c byte) bool { return c > ' ' && c < 0x7f && !isalpha(c) && !isdigit(c) }
func isxdigit(c byte) bool {
	return isdigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f'
}

func matchClass(c, cl byte) bool {
	var res bool
	switch cl | 0x20 {
	case 'a':
		res = isalpha(c)
	case 'c':
		res = iscntrl(c)
	case 'd':
		res = isdigit(c)
	case 'l':
		res = islower(c)
	case 'p':
		res = ispunct(c)
	case 's':
		res = isspace(c)
	case 'u':
		res = isupper(c)
	case 'w':
		res = isalpha(c) || isdigit(c)
	case 'x':
		res = isxdigit(c)
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if isupper(cl) {
		return !res
	}
	return res
}

// matchBracketClass matches c against the set pat[p] == '[' .. pat[ec] == ']'.
func (ms *matchState) matchBracketClass(c byte, p, ec int) bool {
	pat := ms.pat
	sig := true
	p++
	if pat[p] == '^' {
		sig = false
		p++
	}
	for ; p < ec; p++ {
		switch {
		case pat[p] == '%':
			p++
			if matchClass(c, pat[p]) {
				return sig
			}
		case pat[p+1] == '-' && p+2 < ec:
			if pat[p] <= c && c <= pat[p+2] {
				return sig
			}
			p += 2
		case pat[p] == c:
			return sig
		}
	}
	return !sig
}

func (ms *matchState) singleMatch(s, p, ep int) bool {
	if s >= len(ms.src) {
		return false
	}
	c := ms.src[s]
	switch ms.pat[p] {
	case '.':
		return true
	case '%':
		return matchClass(c, ms.pat[p+1])
	case '[':
		return ms.matchBracketClass(c, p, ep-1)
	default:
		return ms.pat[p] == c
	}
}

// match returns the end of the match of pat[p:] at src[s:], or -1.
func (ms *matchState) match(s, p int) int {
	ms.depth++
	if ms.depth > maxMatchDepth {
		ms.L.RaiseError("pattern too complex")
	}
	defer func() { ms.depth-- }()
	pat := ms.pat
	for {
		ms.step()
		if p == len(pat) {
			return s
		}
		switch pat[p] {
		case '(':
			if p+1 < len(pat) && pat[p+1] == ')' {
				return ms.startCapture(s, p+2, capPosition)
			}
			return ms.startCapture(s, p+1, capUnfinished)
		case ')':
			return ms.endCapture(s, p+1)
		case '$':
			if p+1 == len(pat) {
				if s == len(ms.src) {
					return s
				}
				return -1
			}
		case '%':
			if p+1 < len(pat) {
				switch c := pat[p+1]; {
				case c == 'b':
					s = ms.matchBalance(s, p+2)
					if s == -1 {
						return -1
					}
					p += 4
					continue
				case c == 'f':
					p += 2
					if p >= len(pat) || pat[p] != '[' {
						ms.L.RaiseError("missing '[' after '%%f' in pattern")
					}
					ep := ms.classEnd(p)
					var prev, cur byte
					if s > 0 {
						prev = ms.src[s-1]
					}
					if s < len(ms.src) {
						cur = ms.src[s]
					}
					if !ms.matchBracketClass(prev, p, ep-1) && ms.matchBracketClass(cur, p, ep-1) {
						p = ep
						continue
					}
					return -1
				case isdigit(c):
					s = ms.matchCapture(s, c)
					if s == -1 {
						return -1
					}
					p += 2
					continue
				}
			}
		}
		ep := ms.classEnd(p)
		m := ms.singleMatch(s, p, ep)
		if ep < len(pat) {
			switch pat[ep] {
			case '?':
				if m {
					if r := ms.match(s+1, ep+1); r != -1 {
						return r
					}
				}
				p = ep + 1
				continue
			case '*':
				return ms.maxExpand(s, p, ep)
			case '+':
				if m {
					return ms.maxExpand(s+1, p, ep)
				}
				return -1
			case '-':
				return ms.minExpand(s, p, ep)
			}
		}
		if !m {
			return -1
		}
		s++
		p = ep
	}
}

func (ms *matchState) maxExpand(s, p, ep int) int {
	i := 0
	for ms.singleMatch(s+i, p, ep) {
		i++
		ms.step()
	}
	for ; i >= 0; i-- {
		if r := ms.match(s+i, ep+1); r != -1 {
			return r
		}
	}
	return -1
}

func (ms *matchState) minExpand(s, p, ep int) int {
	for {
		if r := ms.match(s, ep+1); r != -1 {
			return r
		}
		if !ms.singleMatch(s, p, ep) {
			return -1
		}
		s++
	}
}

func (ms *matchState) startCapture(s, p, what int) int {
	if ms.level >= maxCaptures {
		ms.L.RaiseError("too many captures")
	}
	ms.capture[ms.level].init = s
	ms.capture[ms.level].len = what
	ms.level++
	r := ms.match(s, p)
	if r == -1 {
		ms.level--
	}
	return r
}

func (ms *matchState) endCapture(s, p int) int {
	l := -1
	for i := ms.level - 1; i >= 0; i-- {
		if ms.capture[i].len == capUnfinished {
			l = i
			break
		}
	}
	if l < 0 {
		ms.L.RaiseError("invalid pattern capture")
	}
	ms.capture[l].len = s - ms.capture[l].init
	r := ms.match(s, p)
	if r == -1 {
		ms.capture[l].len = capUnfinished
	}
	return r
}

func (ms *matchState) matchBalance(s, p int) int {
	if p+1 >= len(ms.pat) {
		ms.L.RaiseError("missing arguments to '%%b'")
	}
	if s >= len(ms.src) || ms.src[s] != ms.pat[p] {
		return -1
	}
	b, e := ms.pat[p], ms.pat[p+1]
	cont := 1
	for s++; s < len(ms.src); s++ {
		ms.step()
		switch ms.src[s] {
		case e:
			cont--
			if cont == 0 {
				return s + 1
			}
		case b:
			cont++
		}
	}
	return -1
}

func (ms *matchState) matchCapture(s int, l byte) int {
	i := int(l - '1')
	if i < 0 || i >= ms.level || ms.capture[i].len == capUnfinished {
		ms.L.RaiseError("invalid capture index")
	}
	c := ms.capture[i]
	if c.len < 0 {
		return -1 // position capture
	}
	if len(ms.src)-s >= c.len && ms.src[c.init:c.init+c.len] == ms.src[s:s+c.len] {
		return s + c.len
	}
	return -1
}

// getCapture returns capture i; with no captures, capture 0 is the whole
// match src[s:e].
func (ms *matchState) getCapture(i, s, e int) glua.LValue {
	if i >= ms.level {
		if i == 0 {
			return glua.LString(ms.src[s:e])
		}
		ms.L.RaiseError("invalid capture index")
	}
	c := ms.capture[i]
	switch c.len {
	case capUnfinished:
		ms.L.RaiseError("unfinished capture")
	case capPosition:
		return glua.LNumber(c.init + 1)
	}
	return glua.LString(ms.src[c.init : c.init+c.len])
}

// pushCaptures pushes the captures (or the whole match when there are none
// and whole is set) and returns how many it pushed.
func (ms *matchState) pushCaptures(s, e int, whole bool) int {
	n := ms.level
	if n == 0 && whole {
		n = 1
	}
	for i := 0; i < n; i++ {
		ms.L.Push(ms.getCapture(i, s, e))
	}
	return n
}

func (ms *matchState) addValue(b *strings.Builder, s, e int, repl glua.LValue) {
	L := ms.L
	var val glua.LValue
	switch r := repl.(type) {
	case glua.LString, glua.LNumber:
		rs := r.String()
		for i := 0; i < len(rs); i++ {
			ms.step() // a long replacement is work too
			c := rs[i]
			if c != '%' || i+1 >= len(rs) {
				b.WriteByte(c)
				continue
			}
			i++
			switch d := rs[i]; {
			case d == '0':
				b.WriteString(ms.src[s:e])
			case isdigit(d):
				b.WriteString(ms.getCapture(int(d-'1'), s, e).String())
			default:
				b.WriteByte(d)
			}
			if b.Len() > ms.v.maxString() {
				L.RaiseError("string.gsub: result would exceed %d bytes", ms.v.maxString())
			}
		}
		return
	case *glua.LTable:
		val = L.GetTable(r, ms.getCapture(0, s, e))
	case *glua.LFunction:
		n := ms.pushCapturesFor(r, s, e)
		L.Call(n, 1)
		val = L.Get(-1)
		L.Pop(1)
	}
	switch x := val.(type) {
	case *glua.LNilType:
		b.WriteString(ms.src[s:e])
	case glua.LBool:
		if x {
			L.RaiseError("invalid replacement value (a boolean)")
		}
		b.WriteString(ms.src[s:e])
	case glua.LString, glua.LNumber:
		b.WriteString(x.String())
	default:
		L.RaiseError("invalid replacement value (a %s)", val.Type())
	}
}

func (ms *matchState) pushCapturesFor(fn *glua.LFunction, s, e int) int {
	ms.L.Push(fn)
	return ms.pushCaptures(s, e, true)
}
