//go:build cgo && !nomruby

package mruby

import (
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"time"

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

	"escape_uri":          fnEscape(false),
	"escape_form":         fnEscape(true),
	"unescape_uri":        fnUnescape(false),
	"unescape_form":       fnUnescape(true),
	"encode_args":         fnEncodeArgs,
	"decode_args":         fnDecodeArgs,
	"digest_hex":          fnDigest(true),
	"digest":              fnDigest(false),
	"hmac_hex":            fnHMAC(true),
	"hmac":                fnHMAC(false),
	"hex_encode":          fnHexEncode,
	"hex_decode":          fnHexDecode,
	"base64url_encode":    fnBase64URLEncode,
	"random_bytes":        fnRandomBytes,
	"random_token":        fnRandomToken,
	"constant_time_equal": fnConstantTimeEqual,
	"http_time":           fnHTTPTime,
	"parse_http_time":     fnParseHTTPTime,

	"cookies":    fnCookies,
	"cookie":     fnCookie,
	"set_cookie": fnSetCookie,
	"post_args":  fnPostArgs,
	"json_body":  fnJSONBody,
	"headers":    fnHeaders,
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
	all, err := re.FindAll(s, -1)
	if err != nil {
		return nil, &callError{msg: "String#scan: " + err.Error()}
	}
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
	all, err := re.FindAll(s, n)
	if err != nil {
		return nil, &callError{msg: "String#gsub: " + err.Error()}
	}
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
	return rubySplit(re, s, limit)
}

func rubySplit(re *scripting.Regex, s string, limit int) (any, error) {
	out := []any{}
	if s == "" || limit == 1 {
		if s != "" {
			out = append(out, s)
		}
		return out, nil
	}
	all, err := re.FindAll(s, -1)
	if err != nil {
		return nil, &callError{msg: "String#split: " + err.Error()}
	}
	beg := 0
	for _, m := range all {
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
	return out, nil
}

func fnReEscape(rs *runState, a args) (any, error) {
	s, err := a.input(rs, 0, "Regexp.escape")
	if err != nil {
		return nil, err
	}
	return regexp.QuoteMeta(s), nil
}

func fnEscape(form bool) apiFunc {
	return func(rs *runState, a args) (any, error) {
		s, err := a.input(rs, 0, "Hostd.escape_uri")
		if err != nil {
			return nil, err
		}
		return scripting.EscapeURI(s, form), nil
	}
}

// fnUnescape decodes; nil for an invalid escape.
func fnUnescape(form bool) apiFunc {
	return func(rs *runState, a args) (any, error) {
		s, err := a.input(rs, 0, "Hostd.unescape_uri")
		if err != nil {
			return nil, err
		}
		u, err := scripting.UnescapeURI(s, form)
		if err != nil {
			return nil, nil
		}
		return u, nil
	}
}

func fnEncodeArgs(rs *runState, a args) (any, error) {
	if len(a) < 1 {
		return nil, argErr("Hostd.encode_args: missing Hash")
	}
	m, ok := a[0].(map[string]any)
	if !ok {
		return nil, argErr("Hostd.encode_args: argument must be a Hash")
	}
	s, err := scripting.EncodeArgs(m)
	if err != nil {
		return nil, argErr("Hostd.%v", err)
	}
	return s, nil
}

func fnDecodeArgs(rs *runState, a args) (any, error) {
	s, err := a.input(rs, 0, "Hostd.decode_args")
	if err != nil {
		return nil, err
	}
	return scripting.ParseArgs(s), nil
}

// fnDigest: (alg, s) -> the digest, hex or raw.
func fnDigest(hexOut bool) apiFunc {
	return func(rs *runState, a args) (any, error) {
		alg, err := a.str(0, "Hostd.digest")
		if err != nil {
			return nil, err
		}
		s, err := a.input(rs, 1, "Hostd.digest")
		if err != nil {
			return nil, err
		}
		d, err := scripting.Digest(alg, s)
		if err != nil {
			return nil, argErr("Hostd.digest: %v", err)
		}
		if hexOut {
			return hex.EncodeToString(d), nil
		}
		return d, nil
	}
}

// fnHMAC: (alg, key, s) -> the HMAC, hex or raw.
func fnHMAC(hexOut bool) apiFunc {
	return func(rs *runState, a args) (any, error) {
		alg, err := a.str(0, "Hostd.hmac")
		if err != nil {
			return nil, err
		}
		key, err := a.input(rs, 1, "Hostd.hmac")
		if err != nil {
			return nil, err
		}
		s, err := a.input(rs, 2, "Hostd.hmac")
		if err != nil {
			return nil, err
		}
		d, err := scripting.HMAC(alg, key, s)
		if err != nil {
			return nil, argErr("Hostd.hmac: %v", err)
		}
		if hexOut {
			return hex.EncodeToString(d), nil
		}
		return d, nil
	}
}

func fnHexEncode(rs *runState, a args) (any, error) {
	s, err := a.input(rs, 0, "Hostd.hex_encode")
	if err != nil {
		return nil, err
	}
	return hex.EncodeToString([]byte(s)), nil
}

// fnHexDecode decodes hex; nil for invalid input.
func fnHexDecode(rs *runState, a args) (any, error) {
	s, err := a.input(rs, 0, "Hostd.hex_decode")
	if err != nil {
		return nil, err
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, nil
	}
	return b, nil
}

func fnBase64URLEncode(rs *runState, a args) (any, error) {
	s, err := a.input(rs, 0, "Hostd.base64url_encode")
	if err != nil {
		return nil, err
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s)), nil
}

func fnRandomBytes(rs *runState, a args) (any, error) {
	n, err := a.int(0, "Hostd.random_bytes", -1)
	if err != nil {
		return nil, err
	}
	b, err := scripting.RandomBytes(n)
	if err != nil {
		return nil, argErr("Hostd.random_bytes: %v", err)
	}
	return b, nil
}

func fnRandomToken(rs *runState, a args) (any, error) {
	n, err := a.int(0, "Hostd.random_token", 32)
	if err != nil {
		return nil, err
	}
	s, err := scripting.RandomToken(n)
	if err != nil {
		return nil, argErr("Hostd.random_token: %v", err)
	}
	return s, nil
}

func fnConstantTimeEqual(rs *runState, a args) (any, error) {
	x, err := a.input(rs, 0, "Hostd.constant_time_equal?")
	if err != nil {
		return nil, err
	}
	y, err := a.input(rs, 1, "Hostd.constant_time_equal?")
	if err != nil {
		return nil, err
	}
	return subtle.ConstantTimeCompare([]byte(x), []byte(y)) == 1, nil
}

func fnHTTPTime(rs *runState, a args) (any, error) {
	t, err := a.num(0, "Hostd.http_time", float64(time.Now().Unix()))
	if err != nil {
		return nil, err
	}
	s, err := scripting.HTTPTime(t)
	return s, rs.named("Hostd.http_time", err)
}

func fnParseHTTPTime(rs *runState, a args) (any, error) {
	s, err := a.str(0, "Hostd.parse_http_time")
	if err != nil {
		return nil, err
	}
	t, ok := scripting.ParseHTTPTime(s)
	if !ok {
		return nil, nil
	}
	return t, nil
}

// Request side.

func fnCookies(rs *runState, a args) (any, error) {
	h := make(map[string]any)
	scripting.EachCookie(rs.api.Req.HeadersIn(), func(name, val string) bool {
		if _, dup := h[name]; !dup {
			h[name] = val
		}
		return len(h) < scripting.MaxCookies
	})
	return h, nil
}

// fnCookie: (name) -> the value of request cookie name, or nil.
func fnCookie(rs *runState, a args) (any, error) {
	name, err := a.str(0, "r.cookies[]")
	if err != nil {
		return nil, err
	}
	if v, ok := scripting.Cookie(rs.api.Req.HeadersIn(), name); ok {
		return v, nil
	}
	return nil, nil
}

func fnSetCookie(rs *runState, a args) (any, error) {
	opts, ok := a.arg(0).(map[string]any)
	if !ok {
		return nil, argErr("r.set_cookie: want name:, value: and options")
	}
	if err := rs.api.SetCookie(opts); err != nil {
		return nil, argErr("r.%v", err) // "r.set_cookie: ..."
	}
	return nil, nil
}

// fnPostArgs: the form fields, or nil for a malformed body; a body or part
// over its limit fails the hook (413).
func fnPostArgs(rs *runState, a args) (any, error) {
	m, err := rs.api.PostArgs()
	if err != nil && !errors.As(err, new(*scripting.HostError)) {
		return nil, nil
	}
	return m, rs.named("r.post_args", err)
}

// fnJSONBody: the decoded body, or nil when it is not JSON.
func fnJSONBody(rs *runState, a args) (any, error) {
	v, err := rs.api.JSONBody()
	if err != nil && !errors.As(err, new(*scripting.HostError)) {
		return nil, nil
	}
	return v, rs.named("r.json_body", err)
}

// fnHeaders: (in) -> [[name, value or [values]], ...], names in lower case,
// sorted.
func fnHeaders(rs *runState, a args) (any, error) {
	names, values := rs.api.Headers(a.arg(0) == true)
	l := make([]any, len(names))
	for i, k := range names {
		var v any = values[i][0]
		if len(values[i]) > 1 {
			v = values[i]
		}
		l[i] = []any{k, v}
	}
	return l, nil
}
