package lua

import (
	"strings"
	"testing"

	glua "github.com/yuin/gopher-lua"
)

// Bounds of FuzzLuaPattern's inputs. Lua patterns backtrack, polynomially
// in the subject with the number of quantifiers; the matcher checks the
// run's deadline every stepsPerCheck steps (TestHostileHooks proves a slow
// pattern is stopped), so small inputs with a few quantifiers keep each
// fuzz run short and the fuzzer looks for crashes and wrong matches.
const (
	fuzzMaxPattern     = 24
	fuzzMaxSubject     = 96
	fuzzMaxQuantifiers = 3
)

// FuzzLuaPattern runs hostd's Lua 5.1 pattern matcher (strlib.go, behind
// the string.find, match, gmatch and gsub tenants call; gopher-lua's own pm
// package is not reachable from a hook) on arbitrary patterns and
// subjects. A malformed pattern is a Lua error, never a Go panic; a match
// lies inside the subject at or after init, its captures inside the match
// (position captures in 1..len+1); a pattern without magic characters
// matches where strings.Index finds it.
func FuzzLuaPattern(f *testing.F) {
	v := newVM()
	defer v.close()
	L := v.L
	find := L.NewFunction(v.strFind)
	for _, seed := range []struct{ pat, subj string }{
		{"hello", "say hello world"},
		{"^(%w+)=(%w+)$", "key=value"},
		{"%d+", "abc 123 def 45"},
		{"(h)(e)(l)(l)(o)", "hello"},
		{"%b()", "f(a(b)c)d"},
		{"%f[%w]%w+", "THE (quick) fox"},
		{"[^%s]+", "  a b  c "},
		{"()ll()", "hello"},
		{"(a)%1", "xaay"},
		{".-b", "aaab"},
		{"[%a-]", "-"},
		{"%", "x"},
		{"(", "x"},
		{"[a", "a"},
		{"%g", ""},
	} {
		f.Add(seed.pat, seed.subj, 1)
	}
	f.Fuzz(func(t *testing.T, pat, subj string, offset int) {
		if len(pat) > fuzzMaxPattern || len(subj) > fuzzMaxSubject || strings.Count(pat, "*")+strings.Count(pat, "+")+strings.Count(pat, "-")+strings.Count(pat, "?") > fuzzMaxQuantifiers {
			return
		}
		offset = max(0, min(offset, len(subj)))
		top := L.GetTop()
		defer L.SetTop(top)
		// string.find(subj, pat, init) with init 1-based.
		err := L.CallByParam(glua.P{Fn: find, NRet: glua.MultRet, Protect: true},
			glua.LString(subj), glua.LString(pat), glua.LNumber(offset+1))
		if err != nil {
			if _, ok := err.(*glua.ApiError); !ok {
				t.Fatalf("find(%q, %q): error %T %v", subj, pat, err, err)
			}
			return
		}
		ret := make([]glua.LValue, 0, L.GetTop()-top)
		for i := top + 1; i <= L.GetTop(); i++ {
			ret = append(ret, L.Get(i))
		}
		if len(ret) == 1 && ret[0] == glua.LNil {
			if pat != "" && !strings.ContainsAny(pat, specials) && strings.Contains(subj[offset:], pat) {
				t.Fatalf("literal %q not found in %q after %d", pat, subj, offset)
			}
			return
		}
		if len(ret) < 2 {
			t.Fatalf("find(%q, %q) returned %v", subj, pat, ret)
		}
		start, ok1 := ret[0].(glua.LNumber)
		end, ok2 := ret[1].(glua.LNumber)
		if !ok1 || !ok2 || int(start) < offset+1 || int(end) < int(start)-1 || int(end) > len(subj) {
			t.Fatalf("find(%q, %q, %d) = %v", subj, pat, offset+1, ret)
		}
		for _, c := range ret[2:] {
			switch c := c.(type) {
			case glua.LNumber: // position capture
				if int(c) < 1 || int(c) > len(subj)+1 {
					t.Fatalf("position capture %v outside 1..%d", c, len(subj)+1)
				}
			case glua.LString:
				if len(c) > int(end)-int(start)+1 || !strings.Contains(subj[int(start)-1:int(end)], string(c)) {
					t.Fatalf("capture %q outside match [%v,%v] of %q", string(c), start, end, subj)
				}
			default:
				t.Fatalf("capture of type %T", c)
			}
		}
		if pat != "" && !strings.ContainsAny(pat, specials) {
			if want := strings.Index(subj[offset:], pat); int(start) != offset+want+1 {
				t.Fatalf("literal %q in %q: found at %v, want %d", pat, subj, start, offset+want+1)
			}
		}
	})
}
