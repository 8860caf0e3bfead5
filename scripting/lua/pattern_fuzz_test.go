package lua

import (
	"bytes"
	"strings"
	"testing"

	"github.com/yuin/gopher-lua/pm"
)

// Bounds of FuzzLuaPattern's inputs. Lua patterns backtrack, polynomially
// in the subject with the number of quantifiers, and gopher-lua's matcher
// is not interruptible (a hook's script_timeout is checked between VM
// instructions): small inputs with at most a few quantifiers keep each
// run short, and the fuzzer then looks for crashes and wrong matches,
// not for slow patterns.
const (
	fuzzMaxPattern     = 24
	fuzzMaxSubject     = 96
	fuzzMaxQuantifiers = 3
)

// FuzzLuaPattern runs the Lua pattern matcher behind string.find, match,
// gmatch and gsub (gopher-lua's pm package, vendored) on arbitrary
// patterns and subjects. It may refuse a pattern (a *pm.Error, which Lua
// raises as an error), never panic otherwise; every match and capture lies
// inside the subject, in order, and a pattern without magic characters
// matches where bytes.Index finds it.
func FuzzLuaPattern(f *testing.F) {
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
		src := []byte(subj)
		mds, err := pm.Find(pat, src, offset, -1)
		if err != nil {
			if _, ok := err.(*pm.Error); !ok {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		prevEnd := offset
		for _, md := range mds {
			if md.CaptureLength() < 2 {
				t.Fatalf("match with %d positions", md.CaptureLength())
			}
			start, end := md.Capture(0), md.Capture(1)
			if start < prevEnd && start != end || start > end || end > len(src) {
				t.Fatalf("match [%d,%d) of %q in %q after %d", start, end, pat, subj, prevEnd)
			}
			prevEnd = end
			for i := 2; i+1 < md.CaptureLength(); i += 2 {
				s, e := md.Capture(i), md.Capture(i+1)
				if md.IsPosCapture(i) { // 1-based, as Lua returns it
					if s < 1 || s > len(src)+1 {
						t.Fatalf("position capture %d outside 1..%d", s, len(src)+1)
					}
					continue
				}
				if s > e || s < start || e > end {
					t.Fatalf("capture [%d,%d) outside match [%d,%d)", s, e, start, end)
				}
			}
		}
		if pat != "" && !strings.ContainsAny(pat, "^$*+?.([%-") {
			want := bytes.Index(src[offset:], []byte(pat))
			if want < 0 {
				if len(mds) != 0 {
					t.Fatalf("literal %q matched in %q", pat, subj)
				}
			} else if len(mds) == 0 || mds[0].Capture(0) != offset+want || mds[0].Capture(1) != offset+want+len(pat) {
				t.Fatalf("literal %q in %q: want first match at %d", pat, subj, offset+want)
			}
		}
	})
}
