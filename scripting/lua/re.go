package lua

import (
	glua "github.com/yuin/gopher-lua"

	"github.com/hostd/hostd/scripting"
)

// reLib returns hostd.re: regular expressions over Go's regexp (RE2
// syntax, linear time), with OpenResty's ngx.re names.
func (v *vm) reLib() *glua.LTable {
	t := v.L.NewTable()
	v.L.SetFuncs(t, map[string]glua.LGFunction{
		"match": v.reMatch, "find": v.reFind, "gmatch": v.reGmatch,
		"gsub": v.reGsub, "sub": v.reSub, "split": v.reSplit,
	})
	return t
}

// regex returns the subject (argument 1, within the input limit) and the
// compiled pattern (argument 2) with the options of argument optArg.
func (v *vm) regex(L *glua.LState, optArg int) (string, *scripting.Regex) {
	subject := v.checkInput(L, 1)
	pattern := L.CheckString(2)
	re, err := v.reCache.Compile(pattern, L.OptString(optArg, ""))
	if err != nil {
		L.ArgError(2, err.Error())
	}
	if err := re.CheckInput(subject); err != nil {
		L.ArgError(1, err.Error())
	}
	return subject, re
}

// reInit returns the byte offset where matching starts: argument n is a
// 1-based position or a table whose pos field is one (OpenResty's ctx).
func reInit(L *glua.LState, n int, subject string) (int, *glua.LTable) {
	var pos glua.LValue = L.Get(n)
	ctx, _ := pos.(*glua.LTable)
	if ctx != nil {
		pos = ctx.RawGetString("pos")
	}
	init := 1
	switch p := pos.(type) {
	case *glua.LNilType:
	case glua.LNumber:
		init = int(p)
	default:
		L.ArgError(n, "init must be a position or a table with a pos field")
	}
	if init < 1 {
		init = 1
	}
	if init > len(subject)+1 {
		init = len(subject) + 1
	}
	return init - 1, ctx
}

// captures makes OpenResty's match table: [0] the match, [1..n] the groups
// (false when a group did not take part), and named groups by name.
func captures(L *glua.LState, re *scripting.Regex, s string, m []int) *glua.LTable {
	n := len(m) / 2
	t := L.CreateTable(n-1, 0)
	names := re.SubexpNames()
	for i := 0; i < n; i++ {
		var val glua.LValue = glua.LFalse
		if m[2*i] >= 0 {
			val = glua.LString(s[m[2*i]:m[2*i+1]])
		}
		t.RawSetInt(i, val)
		if i > 0 && names[i] != "" {
			t.RawSetString(names[i], val)
		}
	}
	return t
}

// offset shifts the match indexes m of s[off:] to indexes into s.
func offset(m []int, off int) []int {
	for i := range m {
		if m[i] >= 0 {
			m[i] += off
		}
	}
	return m
}

// reMatch is hostd.re.match(subject, pattern [, opts [, init|ctx]]): the
// captures table of the first match at or after init, or nil.
func (v *vm) reMatch(L *glua.LState) int {
	s, re := v.regex(L, 3)
	off, ctx := reInit(L, 4, s)
	m := re.FindStringSubmatchIndex(s[off:])
	if m == nil {
		L.Push(glua.LNil)
		return 1
	}
	offset(m, off)
	if ctx != nil {
		ctx.RawSetString("pos", glua.LNumber(m[1]+1))
	}
	L.Push(captures(L, re, s, m))
	return 1
}

// reFind is hostd.re.find(subject, pattern [, opts [, init [, nth]]]): the
// 1-based first and last byte of the match (or of group nth), or nil.
func (v *vm) reFind(L *glua.LState) int {
	s, re := v.regex(L, 3)
	off, ctx := reInit(L, 4, s)
	nth := L.OptInt(5, 0)
	if nth < 0 || nth > re.NumSubexp() {
		L.ArgError(5, "nth is not a group of the pattern")
	}
	m := re.FindStringSubmatchIndex(s[off:])
	if m == nil || m[2*nth] < 0 {
		L.Push(glua.LNil)
		return 1
	}
	offset(m, off)
	if ctx != nil {
		ctx.RawSetString("pos", glua.LNumber(m[1]+1))
	}
	L.Push(glua.LNumber(m[2*nth] + 1))
	L.Push(glua.LNumber(m[2*nth+1]))
	return 2
}

// reGmatch is hostd.re.gmatch(subject, pattern [, opts]): an iterator over
// the captures tables of every match.
func (v *vm) reGmatch(L *glua.LState) int {
	s, re := v.regex(L, 3)
	all, err := re.FindAll(s, -1)
	if err != nil {
		L.RaiseError("hostd.re.gmatch: %s", err.Error())
	}
	i := 0
	L.Push(L.NewFunction(func(L *glua.LState) int {
		if i >= len(all) {
			L.Push(glua.LNil)
			return 1
		}
		m := all[i]
		all[i] = nil
		i++
		L.Push(captures(L, re, s, m))
		return 1
	}))
	return 1
}

func (v *vm) reGsub(L *glua.LState) int { return v.replace(L, -1) }
func (v *vm) reSub(L *glua.LState) int  { return v.replace(L, 1) }

// replace is hostd.re.gsub/sub(subject, pattern, replace [, opts]): the
// subject with at most n (-1: every) matches replaced, and the number of
// replacements. replace is a template ($0, $1, ${name}, $$) or a function
// of the captures table returning the replacement.
func (v *vm) replace(L *glua.LState, n int) int {
	s, re := v.regex(L, 4)
	repl := L.Get(3)
	fn, isFn := repl.(*glua.LFunction)
	tmpl, isStr := repl.(glua.LString)
	if !isFn && !isStr {
		if num, ok := repl.(glua.LNumber); ok {
			tmpl, isStr = glua.LString(num.String()), true
		} else {
			L.ArgError(3, "replace must be a string or a function")
		}
	}
	all, err := re.FindAll(s, n)
	if err != nil {
		L.RaiseError("hostd.re.gsub: %s", err.Error())
	}
	if len(all) == 0 {
		L.Push(glua.LString(s))
		L.Push(glua.LNumber(0))
		return 2
	}
	max := v.e.cfg.Limits.MaxInput
	out := make([]byte, 0, len(s))
	last := 0
	for _, m := range all {
		out = append(out, s[last:m[0]]...)
		if isFn {
			v.rc.poke()
			L.Push(fn)
			L.Push(captures(L, re, s, m))
			L.Call(1, 1)
			r := L.Get(-1)
			L.Pop(1)
			switch r := r.(type) {
			case glua.LString:
				out = append(out, r...)
			case glua.LNumber:
				out = append(out, r.String()...)
			default:
				L.RaiseError("hostd.re.gsub: the replace function must return a string (got %s)", r.Type())
			}
		} else {
			var err error
			if out, err = re.Expand(out, string(tmpl), s, m, scripting.TemplateDollar); err != nil {
				L.ArgError(3, err.Error())
			}
		}
		if len(out) > max {
			L.RaiseError("hostd.re.gsub: result is longer than the input limit")
		}
		last = m[1]
	}
	out = append(out, s[last:]...)
	if len(out) > max {
		L.RaiseError("hostd.re.gsub: result is longer than the input limit")
	}
	L.Push(glua.LString(out))
	L.Push(glua.LNumber(len(all)))
	return 2
}

// maxSplit bounds the parts of hostd.re.split.
const maxSplit = 1 << 20

// reSplit is hostd.re.split(subject, pattern [, opts [, max]]): the parts
// of subject between the matches, at most max of them (0 or absent: all).
func (v *vm) reSplit(L *glua.LState) int {
	s, re := v.regex(L, 3)
	n := L.OptInt(4, 0)
	if n <= 0 || n > maxSplit {
		n = maxSplit + 1
	}
	parts := re.Split(s, n)
	if len(parts) > maxSplit {
		L.RaiseError("hostd.re.split: more than %d parts", maxSplit)
	}
	t := L.CreateTable(len(parts), 0)
	for _, p := range parts {
		t.Append(glua.LString(p))
	}
	L.Push(t)
	return 1
}
