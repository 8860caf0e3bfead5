//go:build cgo && !nomruby

package mruby

import (
	_ "embed"
	"fmt"
	"regexp"

	"github.com/hostd/hostd/scripting"
)

// prelude is the Ruby part of the hook API, run once per VM before the
// core is frozen: Regexp and MatchData over Go's regexp, the String
// methods that take a Regexp, and the Hostd helpers written in Ruby. It
// reaches Go through Hostd.__fn(name, *args) (fn below).
//
//go:embed prelude.rb
var prelude string

// apiFunc is one function of Hostd.__fn; a is its arguments after the
// name.
type apiFunc func(rs *runState, a args) (any, error)

// apiFuncs are the functions Hostd.__fn dispatches to, by name.
var apiFuncs = map[string]apiFunc{
	"re_compile": fnReCompile,
	"re_match":   fnReMatch,
	"re_scan":    fnReScan,
	"re_sub":     fnReSub,
	"re_split":   fnReSplit,
	"re_escape":  fnReEscape,
}

// fn runs Hostd.__fn(name, *args).
func (rs *runState) fn(a args) (any, error) {
	name, err := a.str(0, "Hostd.__fn")
	if err != nil {
		return nil, err
	}
	f, ok := apiFuncs[name]
	if !ok {
		return nil, argErr("Hostd.__fn: unknown function %q", name)
	}
	return f(rs, a[1:])
}

// int returns argument i as an integer; def when absent or nil.
func (a args) int(i int, name string, def int) (int, error) {
	f, err := a.num(i, name, float64(def))
	if err != nil {
		return 0, err
	}
	if f != float64(int(f)) {
		return 0, argErr("%s: argument %d must be an Integer", name, i+1)
	}
	return int(f), nil
}

// regex returns the compiled pattern of arguments 0 and 1 (source and
// flags) and the subject, argument 2, within the input and work limits.
func (rs *runState) regex(a args, name string) (*scripting.Regex, string, error) {
	src, err := a.str(0, name)
	if err != nil {
		return nil, "", err
	}
	flags, err := a.str(1, name)
	if err != nil {
		return nil, "", err
	}
	re, err := rs.re.Compile(src, flags)
	if err != nil {
		return nil, "", &callError{msg: fmt.Sprintf("%s: %v", name, err)}
	}
	s, err := a.input(rs, 2, name)
	if err != nil {
		return nil, "", err
	}
	if err := re.CheckInput(s); err != nil {
		return nil, "", argErr("%s: %v", name, err)
	}
	return re, s, nil
}

// offsets converts match indexes for Ruby.
func offsets(m []int) []any {
	l := make([]any, len(m))
	for i, x := range m {
		l[i] = int64(x)
	}
	return l
}

// fnReCompile compiles a pattern: the group names (nil for an unnamed
// group, index 0 the whole match), or the error message as a String
// (the prelude raises RegexpError with it).
func fnReCompile(rs *runState, a args) (any, error) {
	src, err := a.str(0, "Regexp.new")
	if err != nil {
		return nil, err
	}
	flags, err := a.str(1, "Regexp.new")
	if err != nil {
		return nil, err
	}
	re, err := rs.re.Compile(src, flags)
	if err != nil {
		return err.Error(), nil
	}
	names := re.SubexpNames()
	l := make([]any, len(names))
	for i, n := range names {
		if n != "" {
			l[i] = n
		}
	}
	return l, nil
}

// fnReMatch: (src, flags, subject, pos) -> the byte offsets of the first
// match at or after byte pos (-1 for a group that did not take part), or
// nil.
func fnReMatch(rs *runState, a args) (any, error) {
	re, s, err := rs.regex(a, "Regexp#match")
	if err != nil {
		return nil, err
	}
	pos, err := a.int(3, "Regexp#match", 0)
	if err != nil {
		return nil, err
	}
	if pos < 0 {
		pos += len(s)
	}
	if pos < 0 || pos > len(s) {
		return nil, nil
	}
	m := re.FindStringSubmatchIndex(s[pos:])
	if m == nil {
		return nil, nil
	}
	for i := range m {
		if m[i] >= 0 {
			m[i] += pos
		}
	}
	return offsets(m), nil
}

// fnReScan: (src, flags, subject) -> the offsets of every match.
func fnReScan(rs *runState, a args) (any, error) {
	re, s, err := rs.regex(a, "String#scan")
	if err != nil {
		return nil, err
	}
	all := re.FindAllStringSubmatchIndex(s, -1)
	l := make([]any, len(all))
	for i, m := range all {
		l[i] = offsets(m)
	}
	return l, nil
}

// fnReSub: (src, flags, subject, template, n) -> [result, count]: at most n
// (-1: every) matches replaced by the template (\0, \&, \1..\9, \k<name>,
// \`, \', \\).
func fnReSub(rs *runState, a args) (any, error) {
	re, s, err := rs.regex(a, "String#gsub")
	if err != nil {
		return nil, err
	}
	tmpl, err := a.str(3, "String#gsub")
	if err != nil {
		return nil, err
	}
	n, err := a.int(4, "String#gsub", -1)
	if err != nil {
		return nil, err
	}
	all := re.FindAllStringSubmatchIndex(s, n)
	out := make([]byte, 0, len(s))
	last := 0
	for _, m := range all {
		out = append(out, s[last:m[0]]...)
		if out, err = re.Expand(out, tmpl, s, m, scripting.TemplateBackslash); err != nil {
			return nil, argErr("String#gsub: %v", err)
		}
		if len(out) > rs.e.cfg.Limits.MaxInput {
			return nil, argErr("String#gsub: result is longer than the input limit")
		}
		last = m[1]
	}
	out = append(out, s[last:]...)
	return []any{out, int64(len(all))}, nil
}

// fnReSplit: (src, flags, subject, limit) -> String#split with a Regexp:
// the groups of each separator are included; limit > 0 is the most parts,
// 0 drops trailing empty parts, < 0 keeps them.
func fnReSplit(rs *runState, a args) (any, error) {
	re, s, err := rs.regex(a, "String#split")
	if err != nil {
		return nil, err
	}
	limit, err := a.int(3, "String#split", 0)
	if err != nil {
		return nil, err
	}
	return rubySplit(re.Regexp, s, limit), nil
}

func rubySplit(re *regexp.Regexp, s string, limit int) []any {
	out := []any{}
	if s == "" || limit == 1 {
		if s != "" {
			out = append(out, s)
		}
		return out
	}
	beg := 0
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		if m[0] == m[1] && (m[0] == 0 || m[0] == len(s)) {
			continue // an empty match at either end splits nothing
		}
		out = append(out, s[beg:m[0]])
		for i := 1; 2*i < len(m); i++ {
			if m[2*i] >= 0 {
				out = append(out, s[m[2*i]:m[2*i+1]])
			}
		}
		beg = m[1]
		if limit > 0 && len(out) >= limit-1 {
			break
		}
	}
	out = append(out, s[beg:])
	if limit == 0 {
		for len(out) > 0 && out[len(out)-1] == "" {
			out = out[:len(out)-1]
		}
	}
	return out
}

func fnReEscape(rs *runState, a args) (any, error) {
	s, err := a.input(rs, 0, "Regexp.escape")
	if err != nil {
		return nil, err
	}
	return regexp.QuoteMeta(s), nil
}
