//go:build cgo && !nomruby

package mruby

// rubyAPISources are the Ruby versions of the hook API cases of issue 16
// (scriptingtest's apiCases), merged into rubySources.
var rubyAPISources = map[string]string{
	// Regex.
	"re_match_captures": `m = "order 42-abc".match(/(\d+)-(?P<code>[a-z]+)(x)?/)
r.write(m[0], "|", m[1], "|", m[2], "|", m["code"], "|", m[3].inspect.sub("nil", "false"), "|", ("abc" =~ /\d/).inspect)`,
	"re_match_options_init": `a = /^hello$/i.match("Hello")
b = "a\nb".match(/^b$/)
c = /\d/.match("a1b2", 2)
d = "x1y2" =~ /(\d)/
d1 = $1
e = /\d/.match("x1y2", d + 1)
r.write(a[0], b[0], c[0], d1, e[0], e.end(0) + 1)`,
	"re_find": `m = /w(or)ld/.match("hello world")
r.write(m.begin(0) + 1, "-", m.end(0), " ", m.begin(1) + 1, "-", m.end(1), " ", ("abc" =~ /z/).inspect)`,
	"re_gmatch": `out = []
"a=1, b=22, c=333".scan(/(\w)=(\d+)/) { |k, v| out << k + v }
r.write(out.join(","))`,
	"re_gsub_sub": `s = "john smith, jane doe".gsub(/(\w+) (?P<last>\w+)/, '\k<last> \1$')
n = "john smith, jane doe".scan(/(\w+) (\w+)/).size
t = "aaa".sub(/a/, "b")
u = "a1b22".gsub(/\d+/) { |m| "<#{m.size}>" }
r.write(s, "|", n, "|", t, "|", 1, "|", u)`,
	"re_split": `p = "a, b;c ,d".split(/\s*[,;]\s*/)
q = "a,b,c,d".split(/,/, 2)
r.write(p.size, ":", p.join("|"), " ", q.size, ":", q.join("|"))`,
	"re_invalid_pattern":   "r.write(\"x\")\nRegexp.new(\"(unclosed\")",
	"re_pattern_too_large": "r.write(\"x\")\nRegexp.new(\"a{1000}\" * 30)",
	"re_unknown_option":    `Regexp.new("b", Regexp::EXTENDED)`,
	"re_bad_replacement":   `"abc".gsub(/(b)/, '\2')`,
	"re_input_too_large":   `("a" * (2 * 1024 * 1024)) =~ /a/`,
	"re_no_redos":          `r.write((("a" * 30000) + "!").match(/^(a+)+$/).inspect)`,
}

func init() {
	for k, v := range rubyAPISources {
		rubySources[k] = v
	}
}
