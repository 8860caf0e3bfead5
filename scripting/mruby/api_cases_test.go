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
	"re_invalid_pattern":       "r.write(\"x\")\nRegexp.new(\"(unclosed\")",
	"re_pattern_too_large":     "r.write(\"x\")\nRegexp.new(\"a{1000}\" * 30)",
	"re_unknown_option":        `Regexp.new("b", Regexp::EXTENDED)`,
	"re_bad_replacement":       `"abc".gsub(/(b)/, '\2')`,
	"re_input_too_large":       `("a" * (2 * 1024 * 1024)) =~ /a/`,
	"re_too_many_matches":      `("a" * 600000).gsub(/()/, "")`,
	"re_work_bound":            `("a" * 900000).match(Regexp.new("(a|b)" * 100))`,
	"re_gsub_callback_timeout": `"aaa".gsub(/a/) { loop {} }`,
	"re_no_redos":              `r.write((("a" * 30000) + "!").match(/^(a+)+$/).inspect)`,
	// URL and forms.
	"escape_unescape": `r.write(Hostd.escape_uri("a b&c/d=é~"), " ", Hostd.escape_form("a b+c"), " ",
  Hostd.unescape_uri("a%20b+c"), " ", Hostd.unescape_form("a%20b+c"), " ", Hostd.unescape_uri("%zz").inspect)`,
	"encode_decode_args": `q = Hostd.encode_args({b: "x y", a: [1, "2"], flag: true, off: false})
t = Hostd.decode_args("a=1&a=2&b=x%20y")
r.write(q, " ", t["a"][0], t["a"][1], t["b"])`,
	"encode_args_nested_list": `Hostd.encode_args({a: [[1]]})`,
	"args_repeated_keys":      `r.write(r.args["tag"].class == Array ? "table" : "?", r.args["tag"].size, r.args["tag"][1], r.args["one"].class == String ? "string" : "?")`,
	"post_args_urlencoded": `a = r.post_args
r.write(a["name"], "|", a["tag"][0], a["tag"][1], "|", a["empty"], "|", a["none"].inspect)`,
	"post_args_multipart": `a = r.post_args
f = a["upload"]
r.write(a["title"], "|", f["name"], "|", f["filename"], "|", f["type"], "|", f["size"], "|", f["content"])`,
	"post_args_other_type":     `r.write(r.post_args.empty? ? "nil" : "?")`,
	"post_args_malformed":      `a = r.post_args; r.write(a.inspect, " ", a.nil? ? "string" : "?")`,
	"post_args_body_too_large": "r.write(\"x\")\na = r.post_args",
	"post_args_part_too_large": "r.write(\"x\")\na = r.post_args",
	"json_body": `b = r.json_body
r.write(b["user"], " ", b["ids"].size, " ", (b["ids"][1] == Hostd.json_null).to_s)
x = Hostd.json_decode("{")
r.write(" ", x.inspect, " ", x.nil? ? "string" : "?")`,
	"json_body_too_large": "r.write(\"x\")\nb = r.json_body",
	"json_body_invalid":   `b = r.json_body; r.write(b.inspect, " ", b.nil? ? "string" : "?")`,
	// Cookies.
	"cookies": `c = r.cookies
n = 0
c.each { |k, v| n += 1 }
r.write(c["a"], "|", c[:b], "|", c.fetch("c"), "|", c["bad"].inspect, "|", n, c.size, c.to_h.size, c.key?("a").to_s, c.keys.sort.join)`,
	"set_cookie": `r.set_cookie(name: "theme", value: "dark", path: "/", max_age: 3600, secure: true, http_only: true, same_site: "Lax")
r.set_cookie(name: "gone", value: "", max_age: 0)
r.set_cookie({"name" => "exp", "value" => "1", "expires" => 1798761600, "domain" => "example.test"})
r.set_cookie(name: "theme", value: "light")`,
	"set_cookie_invalid":                     `r.set_cookie(name: "a", value: "x;y")`,
	"set_cookie_same_site_none_needs_secure": `r.set_cookie(name: "a", value: "1", same_site: "None")`,
	"set_cookie_unknown_option":              `r.set_cookie(name: "a", value: "1", httponly: true)`,
	"set_cookie_and_session": `r.set_cookie(name: "before", value: "1")
r.session.set("user", "ann")
r.set_cookie(name: "after", value: "2")
r.write("ok")`,
	// Headers.
	"headers_iterate": `r.headers_out["X-Out"] = ["o1", "o2"]
out = []
r.headers_in.each { |k, v| out << "#{k}=#{v.is_a?(Array) ? v.join("+") : v}" }
r.headers_out.each { |k, v| out << "#{k}=#{v.join("+")}" }
{"z" => 1}.each { |k, _| out << k }
r.write(out.join(" "), " ", r.headers_in["x-multi"])`,
	// Crypto and encodings.
	"digests": `r.write(Hostd.md5("abc"), " ", Hostd.sha1("abc"), " ", Hostd.sha512("")[0, 16], " ",
  Hostd.hex_encode(Hostd.digest(:sha256, "abc"))[0, 8])`,
	"hmacs": `m = "The quick brown fox jumps over the lazy dog"
r.write(Hostd.hmac_md5("key", m), " ", Hostd.hmac_sha1("key", m), " ", Hostd.hmac_sha512("key", m)[0, 16], " ",
  Hostd.base64url_encode(Hostd.hmac("sha256", "key", m)))`,
	"digest_unknown":           `Hostd.digest("crc32", "x")`,
	"hmac_unknown":             `Hostd.hmac("crc32", "k", "x")`,
	"base64url_decode_invalid": `r.write(Hostd.base64url_decode("!!").inspect, " ", Hostd.base64url_decode("a").inspect)`,
	"random_token_too_long":    "r.write(Hostd.random_token(0).size, \" \", Hostd.random_token(4096).size)\nHostd.random_token(4097)",
	"http_time_out_of_range":   `Hostd.http_time(10**15)`,
	"hex_base64url": `r.write(Hostd.hex_encode("\x01\xff"), " ", Hostd.hex_decode("01FF") == "\x01\xff" ? "ok" : "bad", " ",
  Hostd.hex_decode("zz").inspect, " ", Hostd.base64url_encode("\xfb\xff"), " ", Hostd.base64url_decode("-_8") == "\xfb\xff" ? "ok" : "bad")`,
	"random": `a, b = Hostd.random_bytes(16), Hostd.random_bytes(16)
t = Hostd.random_token
r.write(a.bytesize, " ", (a != b).to_s, " ", t.size, " ", t.match?(/\A[A-Za-z0-9_-]+\z/).to_s, " ", Hostd.random_token(6).size)`,
	"random_too_many":     `Hostd.random_bytes(1000000)`,
	"constant_time_equal": `r.write(Hostd.constant_time_equal?("abc", "abc").to_s, Hostd.constant_time_equal?("abc", "abd").to_s, Hostd.constant_time_equal("abc", "ab").to_s)`,
	"http_time": `r.write(Hostd.http_time(1798761600), " ", Hostd.parse_http_time("Fri, 01 Jan 2027 00:00:00 GMT"), " ",
  Hostd.parse_http_time("Friday, 01-Jan-27 00:00:00 GMT"), " ", Hostd.parse_http_time("yesterday").inspect)`,
	// JSON: nil and [] are Ruby's own null and empty array.
	"json_sentinels": `r.write(Hostd.json_encode({"a" => Hostd.json_empty_array, "b" => [1, Hostd.json_null, 3], "c" => {}, "d" => Hostd.json_null}), " ",
  Hostd.json_encode([]), " ", Hostd.json_encode(Hostd.json_decode("[]")), " ",
  Hostd.json_encode(Hostd.json_decode('[null,{"x":null}]')).sub('"x":null', ""), " ", "hostd.json_null")`,
}

// notForRubyAPI are the API cases that do not apply to Ruby, and why.
var notForRubyAPI = map[string]string{
	"os_date": "os.date is Lua's; Ruby hooks have Time#strftime",
}

func init() {
	for k, v := range notForRubyAPI {
		notForRuby[k] = v
	}
	for k, v := range rubyAPISources {
		rubySources[k] = v
	}
}
