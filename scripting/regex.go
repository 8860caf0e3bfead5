package scripting

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
)

// Bounds of hostd.re and Ruby's Regexp. Go's regexp (RE2) matches in time
// linear in the input, so no pattern can backtrack exponentially; these
// bound the rest: the compiled program's size (Go bounds a nested repeat
// but not a row of them, such as 30 x `a{1000}`), its product with the
// input's length, and what a VM keeps compiled.
const (
	// MaxPatternLen is the longest pattern, in bytes.
	MaxPatternLen = 16 << 10
	// MaxRegexInsts is the largest compiled program, in instructions.
	MaxRegexInsts = 20000
	// MaxRegexWork bounds len(subject) * program size of one match.
	MaxRegexWork = 1 << 28
	// regexCacheEntries and regexCacheInsts bound a RegexCache.
	regexCacheEntries = 256
	regexCacheInsts   = 200000
)

// maxMatchInts bounds the match offsets one call keeps (8 MiB).
const maxMatchInts = 1 << 20

// Regex errors.
var (
	ErrTooManyMatches  = errors.New("too many matches (more than 1048576 offsets)")
	ErrPatternTooLarge = errors.New("pattern too large (compiles to more than 20000 instructions or is longer than 16 KiB)")
	ErrRegexWork       = errors.New("pattern too complex for an input this long")
)

// Regex is a compiled pattern with its program size.
type Regex struct {
	*regexp.Regexp
	insts int
}

// CheckInput returns ErrRegexWork when matching s could take too long.
func (r *Regex) CheckInput(s string) error {
	if len(s)*r.insts > MaxRegexWork {
		return ErrRegexWork
	}
	return nil
}

// FindAll returns the submatch offsets of at most n matches (n < 0: all),
// or ErrTooManyMatches when they would hold more than maxMatchInts
// offsets: Go's memory is not the VM's, so it is bounded here.
func (r *Regex) FindAll(s string, n int) ([][]int, error) {
	limit := maxMatchInts / (2 * (r.NumSubexp() + 1))
	if n < 0 || n > limit {
		all := r.FindAllStringSubmatchIndex(s, limit+1)
		if len(all) > limit {
			return nil, ErrTooManyMatches
		}
		if n >= 0 && len(all) > n {
			all = all[:n]
		}
		return all, nil
	}
	return r.FindAllStringSubmatchIndex(s, n), nil
}

// RegexCache keeps compiled patterns for one VM, bounded in entries and in
// total program size (it empties itself when full). It is not safe for
// concurrent use: a VM is used by one goroutine at a time.
type RegexCache struct {
	m     map[regexKey]*Regex
	insts int
}

type regexKey struct{ pattern, flags string }

// Compile returns the compiled pattern with flags, from the cache when
// it is there. Flags are letters: i (case-insensitive), m (multi-line: ^
// and $ match at line breaks), s (. matches \n), U (ungreedy); o, j and J
// (OpenResty's cache, JIT and duplicate-name options) are accepted and
// mean nothing here. Any other letter, such as x, is an error.
func (c *RegexCache) Compile(pattern, flags string) (*Regex, error) {
	if r, ok := c.m[regexKey{pattern, flags}]; ok {
		return r, nil
	}
	// Copies: a lookup's strings may be views of memory that is not Go's
	// (mruby's fast path, hostdReMatch), and the compiled pattern keeps
	// parts of its source (its String, group names).
	pattern, flags = strings.Clone(pattern), strings.Clone(flags)
	r, err := CompileRegex(pattern, flags)
	if err != nil {
		return nil, err
	}
	if c.m == nil || len(c.m) >= regexCacheEntries || c.insts+r.insts > regexCacheInsts {
		c.m = make(map[regexKey]*Regex)
		c.insts = 0
	}
	c.m[regexKey{pattern, flags}] = r
	c.insts += r.insts
	return r, nil
}

// CompileRegex compiles pattern with flags (see RegexCache.Compile)
// within the bounds above.
func CompileRegex(pattern, flags string) (*Regex, error) {
	if len(pattern) > MaxPatternLen {
		return nil, ErrPatternTooLarge
	}
	var pf syntax.Flags = syntax.Perl
	var prefix strings.Builder
	for i := 0; i < len(flags); i++ {
		switch c := flags[i]; c {
		case 'i':
			pf |= syntax.FoldCase
		case 'm':
			pf &^= syntax.OneLine
		case 's':
			pf |= syntax.DotNL
		case 'U':
			pf |= syntax.NonGreedy
		case 'o', 'j', 'J':
			continue
		default:
			return nil, fmt.Errorf("unknown regex option %q (want i, m, s or U)", string(c))
		}
		if !strings.ContainsRune(prefix.String(), rune(flags[i])) {
			prefix.WriteByte(flags[i])
		}
	}
	re, err := syntax.Parse(pattern, pf)
	if err != nil {
		return nil, fmt.Errorf("invalid pattern: %w", err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, fmt.Errorf("invalid pattern: %w", err)
	}
	if len(prog.Inst) > MaxRegexInsts {
		return nil, ErrPatternTooLarge
	}
	full := pattern
	if prefix.Len() > 0 {
		full = "(?" + prefix.String() + ")" + pattern
	}
	rx, err := regexp.Compile(full)
	if err != nil {
		return nil, fmt.Errorf("invalid pattern: %w", err)
	}
	return &Regex{Regexp: rx, insts: len(prog.Inst)}, nil
}

// Template styles of Expand.
const (
	// TemplateDollar: $0 the match, $1..$N or ${N} a group, ${name} a
	// named group, $$ a dollar (OpenResty's ngx.re.sub).
	TemplateDollar = iota
	// TemplateBackslash: \0 or \& the match, \1..\9 a group, \k<name> a
	// named group, \` before, \' after the match, \\ a backslash (Ruby's
	// String#sub).
	TemplateBackslash
)

// Expand appends template with the submatches m (byte offsets into src, as
// from FindStringSubmatchIndex) substituted to dst. An unmatched group is
// empty; a reference to a group that does not exist is an error.
func (r *Regex) Expand(dst []byte, template, src string, m []int, style int) ([]byte, error) {
	group := func(i int) []byte {
		if i < 0 || 2*i+1 >= len(m) || m[2*i] < 0 {
			return dst
		}
		return append(dst, src[m[2*i]:m[2*i+1]]...)
	}
	named := func(name string) (int, error) {
		if n, err := strconv.Atoi(name); err == nil {
			if n > r.NumSubexp() {
				return 0, fmt.Errorf("replacement refers to group %d; the pattern has %d", n, r.NumSubexp())
			}
			return n, nil
		}
		if i := r.SubexpIndex(name); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("replacement refers to an unknown group %q", name)
	}
	esc := byte('$')
	if style == TemplateBackslash {
		esc = '\\'
	}
	for {
		i := strings.IndexByte(template, esc)
		if i < 0 {
			return append(dst, template...), nil
		}
		dst = append(dst, template[:i]...)
		template = template[i+1:]
		if template == "" {
			if style == TemplateBackslash {
				return append(dst, '\\'), nil
			}
			return nil, errors.New("replacement ends with a lone $")
		}
		c := template[0]
		switch {
		case c == esc:
			dst = append(dst, esc)
			template = template[1:]
		case style == TemplateDollar && c >= '0' && c <= '9':
			j := 1
			for j < len(template) && template[j] >= '0' && template[j] <= '9' {
				j++
			}
			n, err := named(template[:j])
			if err != nil {
				return nil, err
			}
			dst = group(n)
			template = template[j:]
		case style == TemplateDollar && c == '{':
			j := strings.IndexByte(template, '}')
			if j < 0 {
				return nil, errors.New("replacement has an unclosed ${")
			}
			n, err := named(template[1:j])
			if err != nil {
				return nil, err
			}
			dst = group(n)
			template = template[j+1:]
		case style == TemplateDollar:
			return nil, fmt.Errorf("replacement has $%c (write $$ for a dollar)", c)
		case c >= '0' && c <= '9':
			n, err := named(template[:1])
			if err != nil {
				return nil, err
			}
			dst = group(n)
			template = template[1:]
		case c == '&':
			dst = group(0)
			template = template[1:]
		case c == '`':
			dst = append(dst, src[:m[0]]...)
			template = template[1:]
		case c == '\'':
			dst = append(dst, src[m[1]:]...)
			template = template[1:]
		case c == 'k' && len(template) > 1 && template[1] == '<':
			j := strings.IndexByte(template, '>')
			if j < 0 {
				return nil, errors.New(`replacement has an unclosed \k<`)
			}
			n, err := named(template[2:j])
			if err != nil {
				return nil, err
			}
			dst = group(n)
			template = template[j+1:]
		default:
			dst = append(dst, '\\', c)
			template = template[1:]
		}
	}
}
