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
		{Name: "http_bad_args", Phase: content, HTTP: true,
			Lua:  "local x = 1\nhostd.http.request{url = 1}",
			Want: Want{Err: "url must be a string", ErrLine: 2}},
		{Name: "http_unknown_key", Phase: content, HTTP: true,
			Lua:  "hostd.http.request{url = 'http://127.0.0.2/', proxy = 'x'}",
			Want: Want{Err: `unknown key "proxy"`, ErrLine: 1}},
		{Name: "http_not_enabled", Phase: access,
			Lua:  `local res, err = hostd.http.request{url = "https://api.example.com/"}` + "\nr:write(tostring(res), \" \", err)",
			Want: Want{Body: "nil outbound HTTP is not enabled for this site (vhost key outbound)"}},
	}
}
