package scripting

import (
	"errors"
	"strings"
	"testing"
)

func TestCompileRegexBounds(t *testing.T) {
	for _, tc := range []struct {
		pattern, flags string
		err            error
		errText        string
	}{
		{pattern: `a{1000}`},
		{pattern: strings.Repeat(`a{1000}`, 30), err: ErrPatternTooLarge},
		{pattern: `((a{100}){100}){100}`, errText: "invalid pattern"}, // Go's own repeat bound
		{pattern: strings.Repeat("a", MaxPatternLen+1), err: ErrPatternTooLarge},
		{pattern: `a`, flags: "x", errText: "unknown regex option"},
		{pattern: `(?<=a)b`, errText: "invalid pattern"},
		{pattern: `a`, flags: "imsUojJ"},
	} {
		_, err := CompileRegex(tc.pattern, tc.flags)
		switch {
		case tc.err != nil && !errors.Is(err, tc.err),
			tc.errText != "" && (err == nil || !strings.Contains(err.Error(), tc.errText)),
			tc.err == nil && tc.errText == "" && err != nil:
			t.Errorf("%.40s/%s: %v", tc.pattern, tc.flags, err)
		}
	}
	re, _ := CompileRegex(`a{1000}`, "")
	if err := re.CheckInput(strings.Repeat("a", 1<<20)); !errors.Is(err, ErrRegexWork) {
		t.Errorf("work bound: %v", err)
	}
}

func TestRegexCacheBounded(t *testing.T) {
	var c RegexCache
	for i := range 3 * regexCacheEntries {
		if _, err := c.Compile(strings.Repeat("a", i%50+1)+"b"+string(rune('a'+i%26))+strings.Repeat("c", i/50), ""); err != nil {
			t.Fatal(err)
		}
		if len(c.m) > regexCacheEntries || c.insts > regexCacheInsts {
			t.Fatalf("cache holds %d patterns, %d instructions", len(c.m), c.insts)
		}
	}
	a, _ := c.Compile("x+", "i")
	b, _ := c.Compile("x+", "i")
	d, _ := c.Compile("x+", "")
	if a != b || a == d {
		t.Fatal("cache keys on pattern and flags")
	}
}

func TestExpand(t *testing.T) {
	re, _ := CompileRegex(`(\w+)@(?P<host>\w+)`, "")
	src := "mail bob@example now"
	m := re.FindStringSubmatchIndex(src)
	for _, tc := range []struct {
		tmpl  string
		style int
		want  string
	}{
		{"$2:$1 ${host} ${1}x $$ $0", TemplateDollar, "example:bob example bobx $ bob@example"},
		{`\2:\1 \k<host> \0 \& \\ [\` + "`" + `] [\'] \q`, TemplateBackslash, `example:bob example bob@example bob@example \ [mail ] [ now] \q`},
	} {
		got, err := re.Expand(nil, tc.tmpl, src, m, tc.style)
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.tmpl, got, err, tc.want)
		}
	}
	for _, tmpl := range []string{"$3", "${nope}", "$x", "${1", "$"} {
		if _, err := re.Expand(nil, tmpl, src, m, TemplateDollar); err == nil {
			t.Errorf("%q: no error", tmpl)
		}
	}
}
