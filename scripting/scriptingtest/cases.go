package scriptingtest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hostd/hostd/scripting"
)

func strp(s string) *string { return &s }

// Cases returns the shared hook API cases. Names are stable. Cases with
// ErrLine expect the failing statement on that line of every language's
// source. Sources read the data file of DataFile cases from the request
// header X-Data-File.
func Cases() []Case {
	const (
		rewrite = scripting.PhaseRewrite
		access  = scripting.PhaseAccess
		content = scripting.PhaseContent
		logp    = scripting.PhaseLog
	)
	return append([]Case{
		// Request fields.
		{Name: "method", Phase: content, Req: RequestOptions{Method: "POST"},
			Lua:  `r:write(r.method)`,
			Want: Want{Body: "POST"}},
		{Name: "uri_and_path", Phase: content, Req: RequestOptions{URI: "/a%20b/c?x=1"},
			Lua:  `r:write(r.uri, "|", r.path)`,
			Want: Want{Body: "/a%20b/c?x=1|/a b/c"}},
		{Name: "query_args", Phase: content, Req: RequestOptions{URI: "/p?a=1&b=2&b=3&c=x%20y"},
			Lua:  `r:write(r.args.a, ",", r.args.b[1], ",", r.args.b[2], ",", r.query.c, ",", tostring(r.args.none))`,
			Want: Want{Body: "1,2,3,x y,nil"}},
		{Name: "query_string", Phase: content, Req: RequestOptions{URI: "/p?a=1&b=%20"},
			Lua:  `r:write(r.query_string)`,
			Want: Want{Body: "a=1&b=%20"}},
		{Name: "phase", Phase: access,
			Lua:  `r:write(r.phase)`,
			Want: Want{Body: "access"}},
		{Name: "host_scheme_remote", Phase: content,
			Req:  RequestOptions{Host: "www.example.org", Scheme: "http", RemoteAddr: "203.0.113.7"},
			Lua:  `r:write(r.host, " ", r.scheme, " ", r.remote_addr)`,
			Want: Want{Body: "www.example.org http 203.0.113.7"}},
		{Name: "remote_port", Phase: content,
			Req:  RequestOptions{RemoteAddr: "203.0.113.7", RemotePort: 51234},
			Lua:  `local p = r:remote_port() r:write(type(p), " ", p + 1)`,
			Want: Want{Body: "number 51235"}},
		{Name: "remote_port_unknown", Phase: content,
			Lua:  `r:write(tostring(r:remote_port()))`,
			Want: Want{Body: "nil"}},
		{Name: "headers_in_case_insensitive", Phase: content,
			Req:  RequestOptions{Headers: map[string]string{"X-Test": "v1", "Accept": "text/html"}},
			Lua:  `r:write(r.headers_in["x-test"], " ", r.headers_in["X-TEST"], " ", r.headers_in["Accept"], " ", tostring(r.headers_in["X-Missing"]))`,
			Want: Want{Body: "v1 v1 text/html nil"}},
		{Name: "headers_in_read_only", Phase: content,
			Lua:  "r:write(\"x\")\nr.headers_in[\"X-Foo\"] = \"bar\"\n",
			Want: Want{Body: "x", Err: "read-only", ErrLine: 2}},
		{Name: "headers_out", Phase: content,
			Lua: `r.headers_out["X-Foo"] = "bar"
r.headers_out["X-Gone"] = "1"
r.headers_out["X-Gone"] = nil
r.headers_out["Content-Type"] = "text/plain"
r:write(r.headers_out["x-foo"])`,
			Want: Want{Body: "bar", Headers: map[string]string{"X-Foo": "bar", "X-Gone": "", "Content-Type": "text/plain"}}},
		{Name: "headers_out_invalid_value", Phase: content,
			Lua:  "r.headers_out[\"X-Foo\"] = \"a\\r\\nSet-Cookie: x=1\"",
			Want: Want{Err: "invalid header value", ErrLine: 1, Headers: map[string]string{"X-Foo": "", "Set-Cookie": ""}}},
		{Name: "body", Phase: content, Req: RequestOptions{Method: "POST", Body: "hello body"},
			Lua:  `r:write(#r.body, ":", r.body)`,
			Want: Want{Body: "10:hello body"}},
		{Name: "body_too_large", Phase: content, Req: RequestOptions{Method: "POST", Body: "0123456789", BodyLimit: 4},
			Lua:  `local b = r.body`,
			Want: Want{ErrIs: scripting.ErrBodyTooLarge, ErrLine: 1}},
		{Name: "status_read_write", Phase: content,
			Lua:  "r.status = 201\nr:write(tostring(r.status))",
			Want: Want{Body: "201", RespStatus: 201}},
		{Name: "status_invalid", Phase: content,
			Lua:  "r.status = 42",
			Want: Want{Err: "status", ErrLine: 1}},
		{Name: "write_puts", Phase: content,
			Lua:  "r:write(\"a\", \"b\", 1)\nr:puts(\"line\")\nr:puts(\"x\", \"y\")",
			Want: Want{Body: "ab1line\nxy\n", RespStatus: 200}},
		{Name: "write_too_large", Phase: content, Req: RequestOptions{ResponseLimit: 5},
			Lua:  "r:write(\"abc\")\nr:write(\"defgh\")",
			Want: Want{Body: "abc", ErrIs: scripting.ErrResponseTooLarge, ErrLine: 2}},
		{Name: "redirect_default", Phase: rewrite,
			Lua:  "r:redirect(\"https://example.org/new\")\nr:write(\"not reached\")",
			Want: Want{Status: 302, RespStatus: 302, Headers: map[string]string{"Location": "https://example.org/new"}}},
		{Name: "redirect_301", Phase: access,
			Lua:  `r:redirect("/moved", 301)`,
			Want: Want{Status: 301, Headers: map[string]string{"Location": "/moved"}}},
		{Name: "redirect_bad_status", Phase: access,
			Lua:  `r:redirect("/moved", 200)`,
			Want: Want{Err: "redirect status", ErrLine: 1}},
		{Name: "exit", Phase: access,
			Lua:  "r:exit(403)\nr:write(\"not reached\")",
			Want: Want{Status: 403}},
		{Name: "exit_not_caught_by_pcall", Phase: access,
			Lua:  "pcall(function() r:exit(401) end)\nr:write(\"not reached\")",
			Want: Want{Status: 401}},
		{Name: "return_status", Phase: access,
			Lua:  `return 404`,
			Want: Want{Status: 404}},
		{Name: "return_nothing", Phase: access,
			Lua:  `local x = 1`,
			Want: Want{Status: 0}},
		{Name: "return_bad_value", Phase: access,
			Lua:  `return "yes"`,
			Want: Want{Err: "status"}},
		{Name: "basic_auth", Phase: access,
			Req:  RequestOptions{Headers: map[string]string{"Authorization": "Basic YWxpY2U6czNjcjN0OndpdGg6Y29sb25z"}},
			Lua:  "local u, p = r:basic_auth()\nr:write(u, \"/\", p)",
			Want: Want{Body: "alice/s3cr3t:with:colons"}},
		{Name: "basic_auth_absent", Phase: access,
			Lua:  "local u, p = r:basic_auth()\nr:write(tostring(u), \"/\", tostring(p))",
			Want: Want{Body: "nil/nil"}},
		{Name: "basic_auth_malformed", Phase: access,
			Req:  RequestOptions{Headers: map[string]string{"Authorization": "Basic !!!notbase64"}},
			Lua:  "local u = r:basic_auth()\nr:write(tostring(u))",
			Want: Want{Body: "nil"}},
		{Name: "set_path", Phase: rewrite, Req: RequestOptions{URI: "/old?a=1"},
			Lua:  "r:set_path(\"/new/index.html?b=2\")\nr:write(r.path, \" \", r.args.b)",
			Want: Want{Body: "/new/index.html 2", Path: "/new/index.html", Query: strp("b=2")}},
		{Name: "set_path_outside_rewrite", Phase: content,
			Lua:  `r:set_path("/x")`,
			Want: Want{Err: "rewrite phase", ErrLine: 1}},
		{Name: "set_path_relative", Phase: rewrite, Req: RequestOptions{URI: "/old"},
			Lua:  `r:set_path("../etc/passwd")`,
			Want: Want{Err: "must start with '/'", ErrLine: 1, Path: "/old"}},
		{Name: "set_path_nul", Phase: rewrite, Req: RequestOptions{URI: "/old"},
			Lua:  `r:set_path("/a\0b")`,
			Want: Want{Err: "contains NUL", ErrLine: 1, Path: "/old"}},
		{Name: "vars", Phase: access, Req: RequestOptions{Vars: map[string]any{"user": "bob", "n": int64(2)}},
			Lua: `r:write(r.vars.user, r.vars.n)
r.vars.flag = true
r.vars.count = r.vars.n + 1
r.vars.list = {1, "two", {three = 3}}
r.vars.user = nil
r:write(tostring(r.vars.user))`,
			Want: Want{Body: "bob2nil", Vars: map[string]any{
				"flag": true, "count": int64(3),
				"list": []any{int64(1), "two", map[string]any{"three": int64(3)}},
			}}},
		{Name: "vars_not_jsonable", Phase: access,
			Lua:  `r.vars.f = function() end`,
			Want: Want{Err: "vars", ErrLine: 1}},
		{Name: "log", Phase: logp,
			Lua:  "hostd.log(\"info\", \"hello from the hook\")\nhostd.log(\"error\", \"bad thing\")",
			Want: Want{Log: "hello from the hook"}},
		{Name: "log_bad_level", Phase: logp,
			Lua:  `hostd.log("loud", "x")`,
			Want: Want{Err: "level", ErrLine: 1}},
		{Name: "json_encode", Phase: content,
			Lua:  `r:write(hostd.json_encode({b = {1, 2, "x"}, a = 1.5, c = true, d = "q\"<"}))`,
			Want: Want{Body: `{"a":1.5,"b":[1,2,"x"],"c":true,"d":"q\"<"}`}},
		{Name: "json_decode", Phase: content,
			Lua:  "local v = hostd.json_decode('{\"a\":[1,2,{\"b\":\"c\"}],\"n\":-2.5,\"t\":true}')\nr:write(v.a[1] + v.a[2], v.a[3].b, v.n, tostring(v.t))",
			Want: Want{Body: "3c-2.5true"}},
		{Name: "json_decode_invalid", Phase: content,
			Lua:  "local v, err = hostd.json_decode('{\"a\":')\nr:write(tostring(v), \" \", type(err))",
			Want: Want{Body: "nil string"}},
		{Name: "json_encode_unsupported", Phase: content,
			Lua:  `hostd.json_encode({f = print})`,
			Want: Want{Err: "json", ErrLine: 1}},
		{Name: "sha256", Phase: content,
			Lua:  `r:write(hostd.sha256("abc"))`,
			Want: Want{Body: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}},
		{Name: "hmac_sha256", Phase: content,
			Lua:  `r:write(hostd.hmac_sha256("key", "The quick brown fox jumps over the lazy dog"))`,
			Want: Want{Body: "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"}},
		{Name: "base64", Phase: content,
			Lua:  `r:write(hostd.base64_encode("hello?"), " ", hostd.base64_decode("aGVsbG8/"), " ", tostring(hostd.base64_decode("***")))`,
			Want: Want{Body: "aGVsbG8/ hello? nil"}},
		{Name: "time", Phase: content,
			Lua:  `local t = hostd.time(); if t > 1.7e9 and t < 4e9 then r:write("ok") end`,
			Want: Want{Body: "ok"}},
		{Name: "shared_get_set", Phase: content, Shared: map[string]any{"pre": "set"},
			Lua: `local d = hostd.shared
r:write(d:get("pre"), ",", tostring(d:get("none")))
d:set("s", "str")
d:set("n", 42)
d:set("b", true)
d:set("gone", "x")
d:delete("gone")
d:set("pre", nil)
r:write(",", d:get("s"), d:get("n"), tostring(d:get("b")))`,
			Want: Want{Body: "set,nil,str42true", Shared: map[string]any{
				"s": "str", "n": 42.0, "b": true, "gone": nil, "pre": nil}}},
		{Name: "shared_incr", Phase: access,
			Lua: `local d = hostd.shared
local a = d:incr("hits", 1)
local b = d:incr("hits", 2)
local c = d:incr("other", 1, 10)
r:write(a, " ", b, " ", c)`,
			Want: Want{Body: "1 3 11", Shared: map[string]any{"hits": 3.0, "other": 11.0}}},
		{Name: "shared_ttl", Phase: access,
			Lua: `local d = hostd.shared
d:set("k", "v", 0.05)
local t0 = hostd.time()
r:write(tostring(d:get("k")))
while hostd.time() < t0 + 0.1 do end
r:write(" ", tostring(d:get("k")))`,
			Want: Want{Body: "v nil"}},
		{Name: "shared_incr_non_number", Phase: access, Shared: map[string]any{"s": "text"},
			Lua:  "local v, err = hostd.shared:incr(\"s\", 1)\nr:write(tostring(v), \" \", type(err))",
			Want: Want{Body: "nil string"}},
		// Errors.
		{Name: "runtime_error_line", Phase: content,
			Lua:  "local t = nil\n\nlocal x = t.field\n",
			Want: Want{Err: "hook", ErrLine: 3}},
		{Name: "error_call_line", Phase: content,
			Lua:  "r:write(\"a\")\nerror(\"custom failure\")\n",
			Want: Want{Body: "a", Err: "custom failure", ErrLine: 2}},
		{Name: "syntax_error", Phase: content,
			Lua:  "r:write(\"a\")\nif then\n",
			Want: Want{Err: "syntax", ErrLine: 2}},
		{Name: "timeout", Phase: content, Timeout: 50 * time.Millisecond,
			Lua:  `while true do end`,
			Want: Want{ErrIs: scripting.ErrTimeout}},
		{Name: "timeout_not_caught_by_pcall", Phase: content, Timeout: 50 * time.Millisecond,
			Lua:  "while true do pcall(function() while true do end end) end",
			Want: Want{ErrIs: scripting.ErrTimeout}},
		// Isolation.
		{Name: "globals_do_not_leak_between_runs", Phase: content, Runs: 3,
			Lua:  "if leaked ~= nil then r:write(\"leaked\") else r:write(\"clean\") end\nleaked = true",
			Want: Want{Body: "clean"}},
		{Name: "globals_do_not_leak_between_scripts", Phase: content,
			BeforeLua: `secret_of_a = "x"`,
			Lua:       `r:write(tostring(secret_of_a))`,
			Want:      Want{Body: "nil"}},
		{Name: "stdlib_changes_do_not_leak", Phase: content,
			BeforeLua: `pcall(function() string.hacked = 1 end)
pcall(function() table.insert = nil end)
pcall(function() getmetatable("").__index.hacked = 1 end)`,
			Lua:  `r:write(tostring(string.hacked), " ", type(table.insert), " ", tostring(("x").hacked))`,
			Want: Want{Body: "nil function nil"}},
		{Name: "functions_do_not_leak", Phase: content,
			BeforeLua: `function helper() return "leak" end
local ok = pcall(function() r.leak = 1 end)`,
			Lua:  `r:write(tostring(helper), " ", tostring(r.leak))`,
			Want: Want{Body: "nil nil"}},
		{Name: "prng_seed_does_not_leak", Phase: content,
			BeforeLua: `pcall(function() math.randomseed(42) end)`,
			Lua:       `r:write(tostring(math.randomseed), " ", type(math.random()))`,
			Want:      Want{Body: "nil number"}},
		{Name: "collector_settings_do_not_leak", Phase: content,
			BeforeLua: `pcall(function() collectgarbage("stop") end)`,
			Lua:       `r:write(tostring(collectgarbage))`,
			Want:      Want{Body: "nil"}},
		{Name: "api_module_read_only", Phase: content,
			BeforeLua: `pcall(function() hostd.log = nil end)
pcall(function() hostd.injected = 1 end)`,
			Lua:  `r:write(type(hostd.log), " ", tostring(hostd.injected))`,
			Want: Want{Body: "function nil"}},
		// Files.
		{Name: "io_read_file", Phase: content, DataFile: "line one\nline two\n",
			Lua: `local f = assert(io.open(r.headers_in["X-Data-File"], "r"))
local first = f:read("*l")
local rest = f:read("*a")
f:close()
r:write(first, "|", rest)`,
			Want: Want{Body: "line one|line two\n"}},
		{Name: "io_open_missing", Phase: content,
			Lua:  "local f, err = io.open(\"/nonexistent/hostd-test\", \"r\")\nr:write(tostring(f), \" \", type(err))",
			Want: Want{Body: "nil string"}},
		// The file gate: only the tenant's directories (here the hook and
		// the data directory), no escape through "..".
		{Name: "io_outside_roots", Phase: content,
			Lua: `local out = {}
for _, p in ipairs({"/etc/passwd", "/proc/self/maps", "/proc/self/task/1/comm", "../x"}) do
  local f, err = io.open(p, "r")
  out[#out + 1] = tostring(f) .. " " .. err
end
local ok, err = pcall(io.lines, "/etc/hostname")
out[#out + 1] = tostring(ok) .. " " .. tostring(err:find("/etc/hostname: path is outside the tenant's allowed directories", 1, true) ~= nil)
r:write(table.concat(out, "\n"))`,
			Want: Want{Body: "nil /etc/passwd: path is outside the tenant's allowed directories\n" +
				"nil /proc/self/maps: path is outside the tenant's allowed directories\n" +
				"nil /proc/self/task/1/comm: path is outside the tenant's allowed directories\n" +
				"nil ../x: path is outside the tenant's allowed directories\n" +
				"false true"}},
		{Name: "io_write_rename_remove", Phase: content, DataFile: "x",
			Lua: `local dir = r.headers_in["X-Data-File"]:match("^(.*)/")
local f = assert(io.open(dir .. "/new.txt", "w"))
f:write("written")
f:close()
assert(os.rename(dir .. "/new.txt", "moved.txt")) -- relative: under the first root
local g = assert(io.open("moved.txt"))
local got = g:read("*a")
g:close()
assert(os.remove("moved.txt"))
local ok, err = os.rename(dir .. "/data.txt", "/tmp/stolen")
local ok2, err2 = os.remove("/etc/hostname")
local outside = "path is outside the tenant's allowed directories"
r:write(got, "|", tostring(ok), " ", tostring(err:find(outside, 1, true) ~= nil), "|", tostring(ok2), " ", err2,
  "|", tostring(io.open("moved.txt")))`,
			Want: Want{Body: "written|nil true|nil /etc/hostname: path is outside the tenant's allowed directories|nil"}},
	}, slices.Concat(casesB(), luaHostileCases(), mrubyHostileCases(), apiCases())...)
}

// luaHostileCases are the Lua reproductions of issue 13 (a hook that
// allocates without bound, or makes the interpreter do unbounded work):
// each must end in an error within the limits, the memory ones wrapping
// scripting.ErrMemory (Limits.MaxMemory, default 64 MiB), however the
// hook tries to catch it. The time limit is raised so that only the
// memory limit can stop them.
func luaHostileCases() []Case {
	const content = scripting.PhaseContent
	mem := Want{ErrIs: scripting.ErrMemory}
	slow := 60 * time.Second // a safety net: -race on a loaded 2-core machine is slow
	return []Case{
		{Name: "lua_mem_doubling_concat", Phase: content, Timeout: slow,
			Lua:  `local s = string.rep("x", 1048576) for i = 1, 40 do s = s .. s end`,
			Want: mem},
		{Name: "lua_mem_doubling_concat_pcall", Phase: content, Timeout: slow,
			Lua: `local s = string.rep("x", 1048576)
for i = 1, 40 do pcall(function() s = s .. s end) end
for i = 1, 40 do pcall(function() s = s .. s end) end
r:write("survived")`,
			Want: mem},
		{Name: "lua_mem_table_growth", Phase: content, Timeout: slow,
			Lua:  `local t = {} for i = 1, 1e9 do t[#t + 1] = i end`,
			Want: mem},
		{Name: "lua_mem_table_insert", Phase: content, Timeout: slow,
			Lua:  `local t = {} for i = 1, 1e9 do table.insert(t, "x") end`,
			Want: mem},
		{Name: "lua_mem_hash_growth", Phase: content, Timeout: slow,
			Lua:  `local t = {} for i = 1, 1e9 do t["k" .. i] = true end`,
			Want: mem},
		{Name: "lua_mem_nested_tables", Phase: content, Timeout: slow,
			Lua:  `local t = {} while true do t = {t, {}, {}} end`,
			Want: mem},
		{Name: "lua_mem_sparse_index", Phase: content, Timeout: slow,
			Lua:  `local t = {} t[67108863] = 1`,
			Want: mem},
		{Name: "lua_mem_sparse_insert", Phase: content, Timeout: slow,
			Lua:  `table.insert({}, 67108000, 1)`,
			Want: mem},
		{Name: "lua_mem_table_concat", Phase: content, Timeout: slow,
			Lua: `local s = string.rep("x", 65536) local t = {}
for i = 1, 1e6 do t[i] = table.concat({s, s, tostring(i)}) end`,
			Want: mem},
		{Name: "lua_mem_gsub_results", Phase: content, Timeout: slow,
			Lua: `local s = string.rep("x", 100000) local t = {}
for i = 1, 1e6 do t[i] = s:gsub("x", "yyyyyyyyyy") end`,
			Want: mem},
		{Name: "lua_gsub_huge_replacement", Phase: content, Timeout: slow,
			Lua:  `local s = ("x"):rep(100000):gsub("x", ("%0"):rep(100000))`,
			Want: Want{Err: "string.gsub: result would exceed"}},
		{Name: "lua_mem_string_functions", Phase: content, Timeout: slow,
			Lua: `local s = string.rep("ab", 500000) local t = {}
for i = 1, 1e6 do t[i] = s:upper() end`,
			Want: mem},
		{Name: "lua_mem_closures", Phase: content, Timeout: slow,
			Lua:  `local t = {} for i = 1, 1e9 do local x = i t[i] = function() return x end end`,
			Want: mem},
		{Name: "lua_mem_error_handler_cannot_continue", Phase: content, Timeout: slow,
			Lua: `local s = string.rep("x", 1048576)
local ok = xpcall(function() while true do s = s .. s end end, function(e) local t = {} for i = 1, 1e6 do t[i] = {} end return e end)
r:write(tostring(ok))`,
			Want: mem},
		{Name: "lua_shared_dict_budget", Phase: content,
			Lua: `local ok, err, n = true, nil, 0
for i = 1, 10000 do
  ok, err = hostd.shared:set("k" .. i, string.rep("x", 65536))
  if not ok then break end
  n = i
end
local kept = n
for i = 1, n do hostd.shared:delete("k" .. i) end
local ok2 = hostd.shared:set("again", string.rep("x", 65536))
r:write(tostring(ok), " ", err, " ", tostring(kept > 200 and kept < 256), " ", tostring(ok2))`,
			Want: Want{Body: "false shared dictionary is over its byte budget true true"}},
		{Name: "lua_garbage_within_budget", Phase: content, Timeout: slow,
			Lua: `local n = 0
for i = 1, 10000 do local t = {i, tostring(i)} n = n + #t end
r:write(tostring(n))`,
			Want: Want{Body: "20000"}},
		{Name: "lua_deep_nesting_syntax_error", Phase: content,
			Lua:  "local x = " + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000),
			Want: Want{Err: "too many syntax levels", ErrLine: 1}},
		{Name: "lua_long_operator_chain_error", Phase: content,
			Lua:  "local y = 1\nlocal x = y" + strings.Repeat(" + y", 5000),
			Want: Want{Err: "too many syntax levels", ErrLine: 2}},
		{Name: "lua_many_constants_compile", Phase: content,
			Lua:  "local t = {}\n" + manyConstants(20000) + "r:write(tostring(#t))",
			Want: Want{Body: "20000"}},
	}
}

// manyConstants returns n statements each adding a distinct string
// constant to t (gopher-lua looked constants up linearly: quadratic).
func manyConstants(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "t[#t+1] = \"c%d\"\n", i)
	}
	return b.String()
}

// mrubyHostileCases are the mruby reproductions of issue 13 (memory
// safety, bounded C work). mruby only (no Lua source): the Lua engine
// skips them; the Ruby sources are in scripting/mruby/cases_test.go.
func mrubyHostileCases() []Case {
	const content = scripting.PhaseContent
	return []Case{
		// mruby 3.1 crashed the server (SIGSEGV in mrb_vm_exec) on these.
		{Name: "mruby_proc_allocate", Phase: content,
			Want: Want{Err: "allocator undefined for Proc", ErrLine: 1}},
		{Name: "mruby_unbound_method_allocate", Phase: content,
			Want: Want{Err: "allocator undefined for UnboundMethod", ErrLine: 1}},
		{Name: "mruby_allocate_bound_to_proc", Phase: content,
			Want: Want{Err: "allocator undefined for Proc", ErrLine: 1}},
		{Name: "mruby_other_classes_allocate", Phase: content,
			Want: Want{Body: "refused refused refused refused refused refused"}},
		// Quadratic in mruby 3.1 (1.9 s in one C call); linear now.
		{Name: "mruby_quadratic_index", Phase: content,
			Want: Want{Body: "nil nil false 1"}},
		// A gsub whose result would be 1 GB: the memory limit stops it
		// (the longer time limit: 64 MiB of fresh pages can take a second
		// on a loaded machine).
		{Name: "mruby_huge_gsub_replacement", Phase: content, Timeout: 10 * time.Second,
			Want: Want{ErrIs: scripting.ErrMemory}},
		// eval compiles at most 256 KiB.
		{Name: "mruby_eval_too_large", Phase: content,
			Want: Want{Err: "larger than 262144 bytes", ErrLine: 1}},
	}
}
