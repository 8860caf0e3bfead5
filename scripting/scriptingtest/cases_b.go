package scriptingtest

import (
	"time"

	"github.com/hostd/hostd/scripting"
)

// casesB are the cases of issue 16 part B: outbound HTTP, the shared
// dictionary's operations, files and modules in Ruby.
func casesB() []Case {
	const (
		access  = scripting.PhaseAccess
		content = scripting.PhaseContent
	)
	return []Case{
		// Outbound HTTP (hostd.http.request), against StartHTTP's servers.
		{Name: "http_get", Phase: content, HTTP: true,
			Lua: `local res, err = hostd.http.request{url = r.headers_in["X-Base"] .. "/ok", headers = {["X-In"] = "v"}}
r:write(res.status, " ", res.body, " ", res.headers["x-echo"], " ", res.headers["x-multi"][2])`,
			Want: Want{Body: "200 hello GET v b"}},
		{Name: "http_post", Phase: content, HTTP: true,
			Lua: `local res = hostd.http.request{method = "post", url = r.headers_in["X-Base"] .. "/echo",
  headers = {["Content-Type"] = "application/json"}, body = '{"a":1}', timeout = 5}
r:write(res.status, " ", res.body)`,
			Want: Want{Body: `201 POST application/json {"a":1}`}},
		{Name: "http_max_body", Phase: content, HTTP: true,
			Lua: `local res, err = hostd.http.request{url = r.headers_in["X-Base"] .. "/ok", max_body = 3}
r:write(tostring(res), " ", err)`,
			Want: Want{BodyContains: "nil outbound: response body too large"}},
		{Name: "http_timeout", Phase: content, HTTP: true,
			Lua: `local res, err = hostd.http.request{url = r.headers_in["X-Base"] .. "/slow", timeout = 0.2}
r:write(tostring(res), " ", err)`,
			Want: Want{BodyContains: "deadline exceeded"}},
		{Name: "http_run_deadline", Phase: content, HTTP: true, Timeout: 300 * time.Millisecond,
			Lua:  `local res, err = hostd.http.request{url = r.headers_in["X-Base"] .. "/slow"}` + "\nr:write(\"not reached\")",
			Want: Want{ErrIs: scripting.ErrTimeout}},
		{Name: "http_refused_redis", Phase: content, HTTP: true,
			Lua: `local res, err = hostd.http.request{url = "http://127.0.0.1:6379/"}
local res2, err2 = hostd.http.request{url = r.headers_in["X-Redis"]}
r:write(tostring(res), " ", err, "|", tostring(res2), " ", err2)`,
			Want: Want{BodyContains: "nil host \"127.0.0.1\" is not in the site's outbound list: outbound: destination not allowed|nil Get"}},
		{Name: "http_refused_metadata_dns", Phase: content, HTTP: true,
			Lua: `local res, err = hostd.http.request{url = "http://meta.test/latest/meta-data/"}
r:write(tostring(res), " ", tostring(err:find("169.254.169.254:80: outbound: destination not allowed", 1, true) ~= nil))`,
			Want: Want{Body: "nil true"}},
		{Name: "http_refused_redirect", Phase: content, HTTP: true,
			Lua: `local res, err = hostd.http.request{url = r.headers_in["X-Base"] .. "/to?u=" .. r.headers_in["X-Redis"]}
local res2, err2 = hostd.http.request{url = r.headers_in["X-Base"] .. "/to?u=http://169.254.169.254/"}
r:write(tostring(res), " ", tostring(err:find("destination not allowed", 1, true) ~= nil), " ",
  tostring(res2), " ", tostring(err2:find("destination not allowed", 1, true) ~= nil))`,
			Want: Want{Body: "nil true nil true"}},
		// The metadata address itself, and the Redis by name (its own port
		// and 6379): each refused for its address, not failing otherwise.
		{Name: "http_refused_by_address", Phase: content, HTTP: true,
			Lua: `local out = {}
for _, u in ipairs({"http://169.254.169.254/latest/meta-data/", r.headers_in["X-Redis"], "http://redis.test:6379/"}) do
  local res, err = hostd.http.request{url = u}
  out[#out + 1] = tostring(res == nil and err:find("destination not allowed", 1, true) ~= nil)
end
r:write(table.concat(out, " "))`,
			Want: Want{Body: "true true true"}},
		{Name: "http_bad_args", Phase: content, HTTP: true,
			Lua:  "local x = 1\nhostd.http.request{url = 1}",
			Want: Want{Err: "url must be a string", ErrLine: 2}},
		{Name: "http_unknown_key", Phase: content, HTTP: true,
			Lua:  "hostd.http.request{url = 'http://127.0.0.2/', proxy = 'x'}",
			Want: Want{Err: `unknown key "proxy"`, ErrLine: 1}},
		{Name: "http_not_enabled", Phase: access,
			Lua:  `local res, err = hostd.http.request{url = "https://api.example.com/"}` + "\nr:write(tostring(res), \" \", err)",
			Want: Want{Body: "nil outbound HTTP is not enabled for this site (vhost key outbound)"}},
		// Shared dictionary operations.
		{Name: "shared_add_replace", Phase: access, Shared: map[string]any{"have": "x"},
			Lua: `local d = hostd.shared
local a1, e1 = d:add("new", "v1")
local a2, e2 = d:add("new", "v2")
local r1, f1 = d:replace("missing", 1)
local r2 = d:replace("have", 5, 60)
r:write(tostring(a1), " ", tostring(a2), " ", e2, " ", tostring(r1), " ", f1, " ", tostring(r2))`,
			Want: Want{Body: "true false exists false not found true", Shared: map[string]any{"new": "v1", "have": 5.0, "missing": nil}}},
		{Name: "shared_add_nil", Phase: access,
			Lua:  "local x = 1\nhostd.shared:add(\"k\", nil)",
			Want: Want{Err: "value must not be nil", ErrLine: 2}},
		{Name: "shared_ttl_expire", Phase: access, Shared: map[string]any{"forever": "x"},
			Lua: `local d = hostd.shared
d:set("k", "v", 30)
local t1 = d:ttl("k")
local t2 = d:ttl("forever")
local t3, e3 = d:ttl("none")
local x1 = d:expire("forever", 100)
local x2, ex = d:expire("none", 1)
d:expire("k", 0)
r:write(math.ceil(t1), " ", t2, " ", tostring(t3), " ", e3, " ", tostring(x1), " ", math.ceil(d:ttl("forever")),
  " ", tostring(x2), " ", ex, " ", d:ttl("k"))`,
			Want: Want{Body: "30 0 nil not found true 100 false not found 0"}},
		{Name: "shared_expire_gone", Phase: access,
			Lua: `local d = hostd.shared
d:set("k", "v")
d:expire("k", 0.05)
local t0 = hostd.time()
while hostd.time() < t0 + 0.1 do end
r:write(tostring(d:get("k")), " ", tostring(d:ttl("k")))`,
			Want: Want{Body: "nil nil"}},
		{Name: "shared_get_keys", Phase: access, Shared: map[string]any{"b": "1", "a": "2", "c": "3"},
			Lua: `local d = hostd.shared
local all = d:get_keys(0)
local two = d:get_keys(2)
r:write(table.concat(all, ","), " ", table.concat(two, ","), " ", #d:get_keys())`,
			Want: Want{Body: "a,b,c a,b 3"}},
		{Name: "shared_incr_init_ttl", Phase: access,
			Lua: `local d = hostd.shared
local a = d:incr("n", 5, 100, 60)
local b = d:incr("n", 1, 100, 1)
r:write(a, " ", b, " ", math.ceil(d:ttl("n")))`,
			Want: Want{Body: "105 106 60", Shared: map[string]any{"n": 106.0}}},
		{Name: "shared_cas", Phase: access, Shared: map[string]any{"v": "a", "n": 1.0},
			Lua: `local d = hostd.shared
local ok1 = d:cas("v", "a", "ab")
local ok2, e2 = d:cas("v", "a", "ac")
local ok3 = d:set_if("n", 1, 2)
local ok4 = d:cas("absent", nil, "now")
local ok5 = d:cas("absent", nil, "again")
local ok6 = d:cas("n", 2, nil)
r:write(tostring(ok1), " ", tostring(ok2), " ", e2, " ", tostring(ok3), " ", tostring(ok4), " ", tostring(ok5), " ", tostring(ok6))`,
			Want: Want{Body: "true false changed true true false true", Shared: map[string]any{"v": "ab", "absent": "now", "n": nil}}},
		// Files (Ruby's File and Dir; the same operations with Lua's io).
		{Name: "file_read", Phase: content, DataFile: "line1\nline2\n",
			Lua:  `local f = io.open(r.headers_in["X-Data-File"]) r:write(f:read("*a")) f:close()`,
			Want: Want{Body: "line1\nline2\n"}},
		{Name: "file_exist", Phase: content, DataFile: "x",
			Lua: `local df = r.headers_in["X-Data-File"]
r:write(tostring(io.open(df) ~= nil), " ", tostring(io.open(df .. ".none") ~= nil), " ", tostring(io.open("/etc/passwd") ~= nil))`,
			Want: Want{Body: "true false false"}},
		{Name: "file_write_read_lines", Phase: content, DataFile: "x",
			Lua: `local p = r.headers_in["X-Data-File"]:gsub("data.txt$", "new.txt")
local f = io.open(p, "w") f:write("a\n", "b\n") f:close()
f = io.open(p, "a") f:write("c\n") f:close()
local out = {}
for l in io.lines(p) do out[#out + 1] = l end
r:write(table.concat(out, ","))`,
			Want: Want{Body: "a,b,c"}},
		{Name: "file_outside_roots", Phase: content,
			Lua:  `local f, err = io.open("/etc/passwd") r:write(tostring(f), " ", err)`,
			Want: Want{Body: "nil /etc/passwd: path is outside the tenant's allowed directories"}},
		{Name: "file_too_many_open", Phase: content, DataFile: "x",
			Lua: `local fs, err = {}
for i = 1, 17 do
  local f, e = io.open(r.headers_in["X-Data-File"])
  if not f then err = e break end
  fs[i] = f
end
r:write(#fs, " ", tostring(err:find("too many open files", 1, true) ~= nil))`,
			Want: Want{Body: "16 true"}},
		{Name: "dir_children", Phase: content, DataFile: "x",
			Lua:  "", // Lua's io has no directory listing
			Want: Want{Body: "data.txt,z.txt|"}},
	}
}
