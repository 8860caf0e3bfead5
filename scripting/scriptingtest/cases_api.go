package scriptingtest

import (
	"strings"

	"github.com/hostd/hostd/scripting"
)

// apiCases are the cases of the request-side and pure-function hook API
// of issue 16 (regex, URL and forms, cookies, header iteration, crypto,
// JSON sentinels, os.date).
func apiCases() []Case {
	const (
		access  = scripting.PhaseAccess
		content = scripting.PhaseContent
	)
	return []Case{
		// Regex.
		{Name: "re_match_captures", Phase: content,
			Lua: `local m = hostd.re.match("order 42-abc", [[(\d+)-(?P<code>[a-z]+)(x)?]])
r:write(m[0], "|", m[1], "|", m[2], "|", m.code, "|", tostring(m[3]), "|", tostring(hostd.re.match("abc", "\\d")))`,
			Want: Want{Body: "42-abc|42|abc|abc|false|nil"}},
		{Name: "re_match_options_init", Phase: content,
			Lua: `local a = hostd.re.match("Hello", "^hello$", "i")
local b = hostd.re.match("a\nb", "^b$", "m")
local c = hostd.re.match("a1b2", "\\d", "", 3)
local ctx = {pos = 1}
local d = hostd.re.match("x1y2", "\\d", "", ctx)
local e = hostd.re.match("x1y2", "\\d", "", ctx)
r:write(a[0], b[0], c[0], d[0], e[0], ctx.pos)`,
			Want: Want{Body: "Hellob2125"}},
		{Name: "re_find", Phase: content,
			Lua: `local from, to = hostd.re.find("hello world", "w(or)ld")
local f2, t2 = hostd.re.find("hello world", "w(or)ld", "", 1, 1)
r:write(from, "-", to, " ", f2, "-", t2, " ", tostring(hostd.re.find("abc", "z")))`,
			Want: Want{Body: "7-11 8-9 nil"}},
		{Name: "re_gmatch", Phase: content,
			Lua: `local out = {}
for m in hostd.re.gmatch("a=1, b=22, c=333", [[(\w)=(\d+)]]) do out[#out + 1] = m[1] .. m[2] end
r:write(table.concat(out, ","))`,
			Want: Want{Body: "a1,b22,c333"}},
		{Name: "re_gsub_sub", Phase: content,
			Lua: `local s, n = hostd.re.gsub("john smith, jane doe", [[(\w+) (?P<last>\w+)]], "${last} $1$$")
local t, k = hostd.re.sub("aaa", "a", "b")
local u = hostd.re.gsub("a1b22", "\\d+", function(m) return "<" .. #m[0] .. ">" end)
r:write(s, "|", n, "|", t, "|", k, "|", u)`,
			Want: Want{Body: "smith john$, doe jane$|2|baa|1|a<1>b<2>"}},
		{Name: "re_split", Phase: content,
			Lua: `local p = hostd.re.split("a, b;c ,d", "\\s*[,;]\\s*")
local q = hostd.re.split("a,b,c,d", ",", "", 2)
r:write(#p, ":", table.concat(p, "|"), " ", #q, ":", table.concat(q, "|"))`,
			Want: Want{Body: "4:a|b|c|d 2:a|b,c,d"}},
		{Name: "re_invalid_pattern", Phase: content,
			Lua:  `r:write("x")` + "\n" + `hostd.re.match("abc", "(unclosed")`,
			Want: Want{Body: "x", Err: "invalid pattern", ErrLine: 2}},
		{Name: "re_pattern_too_large", Phase: content,
			Lua:  `r:write("x")` + "\n" + `hostd.re.match("abc", string.rep("a{1000}", 30))`,
			Want: Want{Body: "x", Err: "pattern too large", ErrLine: 2}},
		{Name: "re_unknown_option", Phase: content,
			Lua:  `hostd.re.match("abc", "b", "x")`,
			Want: Want{Err: "unknown regex option", ErrLine: 1}},
		{Name: "re_bad_replacement", Phase: content,
			Lua:  `hostd.re.gsub("abc", "(b)", "$2")`,
			Want: Want{Err: "group 2", ErrLine: 1}},
		{Name: "re_input_too_large", Phase: content,
			Lua:  `hostd.re.match(string.rep("a", 2 * 1024 * 1024), "a")`,
			Want: Want{Err: "input limit", ErrLine: 1}},
		{Name: "re_no_redos", Phase: content, Timeout: 2 * 1e9,
			Lua:  `r:write(tostring(hostd.re.match(string.rep("a", 30000) .. "!", "^(a+)+$")))`,
			Want: Want{Body: "nil"}},
	}
}

var _ = strings.Repeat
