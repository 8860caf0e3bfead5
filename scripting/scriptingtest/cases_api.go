package scriptingtest

import (
	"strings"
	"time"

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
		// 262,145 matches: slow under the race detector, hence the timeout.
		{Name: "re_too_many_matches", Phase: content, Timeout: 30 * time.Second,
			Lua:  `hostd.re.gsub(string.rep("a", 600000), "()", "")`,
			Want: Want{Err: "too many matches", ErrLine: 1}},
		{Name: "re_work_bound", Phase: content,
			Lua:  `hostd.re.match(string.rep("a", 900000), string.rep("(a|b)", 100))`,
			Want: Want{Err: "too complex", ErrLine: 1}},
		{Name: "re_gsub_callback_timeout", Phase: content, Timeout: 50 * time.Millisecond,
			Lua:  `hostd.re.gsub("aaa", "a", function(m) while true do end end)`,
			Want: Want{ErrIs: scripting.ErrTimeout}},
		{Name: "re_no_redos", Phase: content, Timeout: 2 * 1e9,
			Lua:  `r:write(tostring(hostd.re.match(string.rep("a", 30000) .. "!", "^(a+)+$")))`,
			Want: Want{Body: "nil"}},
		// URL and forms.
		{Name: "escape_unescape", Phase: content,
			Lua: `r:write(hostd.escape_uri("a b&c/d=é~"), " ", hostd.escape_form("a b+c"), " ",
  hostd.unescape_uri("a%20b+c"), " ", hostd.unescape_form("a%20b+c"), " ", tostring(hostd.unescape_uri("%zz")))`,
			Want: Want{Body: "a%20b%26c%2Fd%3D%C3%A9~ a+b%2Bc a b+c a b c nil"}},
		{Name: "encode_decode_args", Phase: content,
			Lua: `local q = hostd.encode_args({b = "x y", a = {1, "2"}, flag = true, off = false})
local t = hostd.decode_args("a=1&a=2&b=x%20y")
r:write(q, " ", t.a[1], t.a[2], t.b)`,
			Want: Want{Body: "a=1&a=2&b=x+y&flag 12x y"}},
		{Name: "encode_args_nested_list", Phase: content,
			Lua:  `hostd.encode_args({a = {{1}}})`,
			Want: Want{Err: "lists cannot nest", ErrLine: 1}},
		{Name: "args_repeated_keys", Phase: content, Req: RequestOptions{URI: "/p?tag=a&tag=b&one=1"},
			Lua:  `r:write(type(r.args.tag), #r.args.tag, r.args.tag[2], type(r.args.one))`,
			Want: Want{Body: "table2bstring"}},
		{Name: "post_args_urlencoded", Phase: content,
			Req: RequestOptions{Method: "POST", Body: "name=Ann+Lee&tag=a&tag=b&empty=",
				Headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}},
			Lua: `local a = r:post_args()
r:write(a.name, "|", a.tag[1], a.tag[2], "|", a.empty, "|", tostring(a.none))`,
			Want: Want{Body: "Ann Lee|ab||nil"}},
		{Name: "post_args_multipart", Phase: content,
			Req: RequestOptions{Method: "POST", Body: multipartBody,
				Headers: map[string]string{"Content-Type": "multipart/form-data; boundary=XyZ"}},
			Lua: `local a = r:post_args()
local f = a.upload
r:write(a.title, "|", f.name, "|", f.filename, "|", f.type, "|", f.size, "|", f.content)`,
			Want: Want{Body: "Hello|upload|notes.txt|text/plain|11|hello world"}},
		{Name: "post_args_other_type", Phase: content,
			Req:  RequestOptions{Method: "POST", Body: `{"a":1}`, Headers: map[string]string{"Content-Type": "application/json"}},
			Lua:  `local a = r:post_args(); r:write(tostring(next(a)))`,
			Want: Want{Body: "nil"}},
		{Name: "post_args_malformed", Phase: content,
			Req: RequestOptions{Method: "POST", Body: "--XyZ\r\nbroken",
				Headers: map[string]string{"Content-Type": "multipart/form-data; boundary=XyZ"}},
			Lua:  `local a, err = r:post_args(); r:write(tostring(a), " ", type(err))`,
			Want: Want{Body: "nil string"}},
		{Name: "post_args_body_too_large", Phase: content,
			Req: RequestOptions{Method: "POST", Body: "a=0123456789", BodyLimit: 4,
				Headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}},
			Lua:  "r:write(\"x\")\nlocal a = r:post_args()",
			Want: Want{Body: "x", ErrIs: scripting.ErrBodyTooLarge, ErrLine: 2}},
		{Name: "post_args_part_too_large", Phase: content, MaxFormPart: 8,
			Req: RequestOptions{Method: "POST", Body: multipartBody,
				Headers: map[string]string{"Content-Type": "multipart/form-data; boundary=XyZ"}},
			Lua:  "r:write(\"x\")\nlocal a = r:post_args()",
			Want: Want{Body: "x", ErrIs: scripting.ErrBodyTooLarge, Err: "max_form_part", ErrLine: 2}},
		{Name: "json_body", Phase: content,
			Req: RequestOptions{Method: "POST", Body: `{"user":"ann","ids":[1,null,3]}`},
			Lua: `local b = r:json_body()
r:write(b.user, " ", #b.ids, " ", tostring(b.ids[2] == hostd.json_null))
local x, err = hostd.json_decode("{")
r:write(" ", tostring(x), " ", type(err))`,
			Want: Want{Body: "ann 3 true nil string"}},
		{Name: "json_body_too_large", Phase: content,
			Req:  RequestOptions{Method: "POST", Body: `{"a":"0123456789"}`, BodyLimit: 4},
			Lua:  "r:write(\"x\")\nlocal b = r:json_body()",
			Want: Want{Body: "x", ErrIs: scripting.ErrBodyTooLarge, ErrLine: 2}},
		{Name: "json_body_invalid", Phase: content,
			Req:  RequestOptions{Method: "POST", Body: `not json`},
			Lua:  `local b, err = r:json_body(); r:write(tostring(b), " ", type(err))`,
			Want: Want{Body: "nil string"}},
		// Cookies.
		{Name: "cookies", Phase: content,
			Req: RequestOptions{Headers: map[string]string{"Cookie": `a=1; b="two words"; bad; a=again; c=x%20y`}},
			Lua: `local c = r.cookies
local n = 0
for k, v in pairs(c) do n = n + 1 end
local keys = {}
for k in pairs(c) do keys[#keys + 1] = k end
table.sort(keys)
r:write(c.a, "|", c.b, "|", c.c, "|", tostring(c.bad), "|", n, n, n, tostring(c.a ~= nil), table.concat(keys))`,
			Want: Want{Body: "1|two words|x%20y|nil|333trueabc"}},
		{Name: "set_cookie", Phase: content,
			Lua: `r:set_cookie{name = "theme", value = "dark", path = "/", max_age = 3600, secure = true, http_only = true, same_site = "Lax"}
r:set_cookie{name = "gone", value = "", max_age = 0}
r:set_cookie{name = "exp", value = "1", expires = 1798761600, domain = "example.test"}
r:set_cookie{name = "theme", value = "light"}`,
			Want: Want{Headers: map[string]string{"Set-Cookie": "gone=; Max-Age=0, " +
				"exp=1; Domain=example.test; Expires=Fri, 01 Jan 2027 00:00:00 GMT, theme=light"}}},
		{Name: "set_cookie_invalid", Phase: content,
			Lua:  `r:set_cookie{name = "a", value = "x;y"}`,
			Want: Want{Err: "set_cookie", ErrLine: 1, Headers: map[string]string{"Set-Cookie": ""}}},
		{Name: "set_cookie_same_site_none_needs_secure", Phase: content,
			Lua:  `r:set_cookie{name = "a", value = "1", same_site = "None"}`,
			Want: Want{Err: "secure", ErrLine: 1}},
		{Name: "set_cookie_unknown_option", Phase: content,
			Lua:  `r:set_cookie{name = "a", value = "1", httponly = true}`,
			Want: Want{Err: "unknown option", ErrLine: 1}},
		{Name: "set_cookie_and_session", Phase: content,
			Lua: `r:set_cookie{name = "before", value = "1"}
r.session:set("user", "ann")
r:set_cookie{name = "after", value = "2"}
r:write("ok")`,
			Want: Want{Body: "ok", HeaderContains: map[string][]string{"Set-Cookie": {"before=1", "hostd_session=", "after=2"}}}},
		// Headers.
		{Name: "headers_iterate", Phase: content,
			Req: RequestOptions{Headers: map[string]string{"X-B": "2", "X-A": "1"}, MultiHeaders: map[string][]string{"X-Multi": {"m1", "m2"}}},
			Lua: `r.headers_out["X-Out"] = {"o1", "o2"}
local out = {}
for k, v in pairs(r.headers_in) do
  out[#out + 1] = k .. "=" .. (type(v) == "table" and table.concat(v, "+") or v)
end
for k, v in pairs(r.headers_out) do out[#out + 1] = k .. "=" .. table.concat(v, "+") end
for k, v in pairs({z = 1}) do out[#out + 1] = k end
r:write(table.concat(out, " "), " ", r.headers_in["x-multi"])`,
			Want: Want{Body: "x-a=1 x-b=2 x-multi=m1+m2 x-out=o1+o2 z m1, m2"}},
		// Crypto and encodings.
		{Name: "digests", Phase: content,
			Lua: `r:write(hostd.md5("abc"), " ", hostd.sha1("abc"), " ", hostd.sha512(""):sub(1, 16), " ",
  hostd.hex_encode(hostd.digest("sha256", "abc")):sub(1, 8))`,
			Want: Want{Body: "900150983cd24fb0d6963f7d28e17f72 a9993e364706816aba3e25717850c26c9cd0d89d cf83e1357eefb8bd ba7816bf"}},
		{Name: "hmacs", Phase: content,
			Lua: `local m = "The quick brown fox jumps over the lazy dog"
r:write(hostd.hmac_md5("key", m), " ", hostd.hmac_sha1("key", m), " ", hostd.hmac_sha512("key", m):sub(1, 16), " ",
  hostd.base64url_encode(hostd.hmac("sha256", "key", m)))`,
			Want: Want{Body: "80070713463e7749b90c2dc24911e275 de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9 b42af09057bac1e2 97yD9DBThCSxMpjmqm-xQ-9NWaFJRhdZl0edvC0aPNg"}},
		{Name: "digest_unknown", Phase: content,
			Lua:  `hostd.digest("crc32", "x")`,
			Want: Want{Err: "unknown digest", ErrLine: 1}},
		{Name: "hmac_unknown", Phase: content,
			Lua:  `hostd.hmac("crc32", "k", "x")`,
			Want: Want{Err: "unknown digest", ErrLine: 1}},
		{Name: "base64url_decode_invalid", Phase: content,
			Lua:  `r:write(tostring(hostd.base64url_decode("!!")), " ", tostring(hostd.base64url_decode("a")))`,
			Want: Want{Body: "nil nil"}},
		{Name: "hex_base64url", Phase: content,
			Lua: `r:write(hostd.hex_encode("\1\255"), " ", hostd.hex_decode("01FF") == "\1\255" and "ok" or "bad", " ",
  tostring(hostd.hex_decode("zz")), " ", hostd.base64url_encode("\251\255"), " ", hostd.base64url_decode("-_8") == "\251\255" and "ok" or "bad")`,
			Want: Want{Body: "01ff ok nil -_8 ok"}},
		{Name: "random", Phase: content,
			Lua: `local a, b = hostd.random_bytes(16), hostd.random_bytes(16)
local t = hostd.random_token()
r:write(#a, " ", tostring(a ~= b), " ", #t, " ", tostring(t:find("^[A-Za-z0-9_-]+$") ~= nil), " ", #hostd.random_token(6))`,
			Want: Want{Body: "16 true 43 true 8"}},
		{Name: "random_too_many", Phase: content,
			Lua:  `hostd.random_bytes(1e6)`,
			Want: Want{Err: "length", ErrLine: 1}},
		{Name: "random_token_too_long", Phase: content,
			Lua:  `r:write(#hostd.random_token(0), " ", #hostd.random_token(4096))` + "\n" + `hostd.random_token(4097)`,
			Want: Want{Body: "0 5462", Err: "length", ErrLine: 2}},
		{Name: "constant_time_equal", Phase: content,
			Lua:  `r:write(tostring(hostd.constant_time_equal("abc", "abc")), tostring(hostd.constant_time_equal("abc", "abd")), tostring(hostd.constant_time_equal("abc", "ab")))`,
			Want: Want{Body: "truefalsefalse"}},
		{Name: "http_time", Phase: content,
			Lua: `r:write(hostd.http_time(1798761600), " ", hostd.parse_http_time("Fri, 01 Jan 2027 00:00:00 GMT"), " ",
  hostd.parse_http_time("Friday, 01-Jan-27 00:00:00 GMT"), " ", tostring(hostd.parse_http_time("yesterday")))`,
			Want: Want{Body: "Fri, 01 Jan 2027 00:00:00 GMT 1798761600 1798761600 nil"}},
		{Name: "http_time_out_of_range", Phase: content,
			Lua:  `hostd.http_time(1e15)`,
			Want: Want{Err: "out of range", ErrLine: 1}},
		// JSON sentinels.
		{Name: "json_sentinels", Phase: content,
			Lua: `r:write(hostd.json_encode({a = hostd.json_empty_array, b = {1, hostd.json_null, 3}, c = {}, d = hostd.json_null}), " ",
  hostd.json_encode(setmetatable({}, hostd.json_array_mt)), " ", hostd.json_encode(hostd.json_decode("[]")), " ",
  hostd.json_encode(hostd.json_decode('[null,{"x":null}]')), " ", tostring(hostd.json_null))`,
			Want: Want{Body: `{"a":[],"b":[1,null,3],"c":{},"d":null} [] [] [null,{}] hostd.json_null`}},
		// os.date.
		{Name: "os_date", Phase: content,
			Lua: `local t = 1798761600 + 86400 * 4 + 3661 -- Tue, 05 Jan 2027 01:01:01 UTC
local d = os.date("!*t", t)
r:write(os.date("!%a %A %b %d %H:%M:%S %Y %j %p %y %e|%c", t), " ", d.wday, " ", d.yday)`,
			Want: Want{Body: "Tue Tuesday Jan 05 01:01:01 2027 005 AM 27  5|Tue Jan  5 01:01:01 2027 3 5"}},
	}
}

// multipartBody is a multipart/form-data body (boundary XyZ) with a
// field "title" and a file "upload".
var multipartBody = strings.ReplaceAll(`--XyZ
Content-Disposition: form-data; name="title"

Hello
--XyZ
Content-Disposition: form-data; name="upload"; filename="../../notes.txt"
Content-Type: text/plain

hello world
--XyZ--
`, "\n", "\r\n")
