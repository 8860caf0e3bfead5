package host_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
)

func TestSessionRubyAndPhases(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"vhosts.d/a.toml": `server_name = "a.example"
root = "../pub"
run_as_server = true
[sessions]
cookie = "sid"
[[hooks]]
phase = "access"
file = "../hooks/access.rb"
[[hooks]]
phase = "content"
file = "../hooks/content.lua"
[[hooks]]
phase = "log"
file = "../hooks/log.lua"
`,
		"pub/": "",
		"hooks/access.rb": `
if r.path == "/login"
  r.session.regenerate_id
  r.session.set("user", r.args["user"])
  r.session.set("roles", ["a", "b"])
end
`,
		"hooks/content.lua": `
if r.path == "/late" then
  r:write("x")
  local ok, err = pcall(function() r.session:set("k", 1) end)
  r:write(tostring(ok))
  return
end
if r.path == "/fail" then
  r.session:set("user", "mallory")
  error("boom")
end
local roles = r.session:get("roles")
r:write("user=", tostring(r.session:get("user")), " roles=", roles and table.concat(roles, ",") or "nil")
`,
		"hooks/log.lua": `
local ok, err = pcall(function() r.session:set("k", 1) end)
if ok then hostd.log("error", "log phase could change the session") end
if r.session:get("user") then hostd.log("info", "log phase saw " .. r.session:get("user")) end
`,
	})
	c := s.Client("a.example", false)
	login := getWithCookie(t, c, "https://a.example/login?user=ann", "")
	var ck string
	for _, k := range login.Cookies() {
		if k.Name == "sid" {
			ck = "sid=" + k.Value
		}
	}
	if ck == "" || login.Body != "user=ann roles=a,b" {
		t.Fatalf("login: cookie %q body %q", login.Header.Values("Set-Cookie"), login.Body)
	}
	if got := getWithCookie(t, c, "https://a.example/", ck).Body; got != "user=ann roles=a,b" {
		t.Fatalf("with cookie: %q", got)
	}
	// A new session cannot start after the body began.
	if got := getWithCookie(t, c, "https://a.example/late", "").Body; got != "xfalse" {
		t.Fatalf("late set: %q", got)
	}
	// A failing hook saves nothing and sets no cookie.
	resp := getWithCookie(t, c, "https://a.example/fail", ck)
	if resp.StatusCode != http.StatusInternalServerError || len(resp.Cookies()) != 0 {
		t.Fatalf("fail: %d %q", resp.StatusCode, resp.Header.Values("Set-Cookie"))
	}
	if got := getWithCookie(t, c, "https://a.example/", ck).Body; got != "user=ann roles=a,b" {
		t.Fatalf("after failed hook: %q", got)
	}
	if resp := getWithCookie(t, c, "https://a.example/fail", ""); len(resp.Cookies()) != 0 {
		t.Fatalf("a failed new session set a cookie: %q", resp.Header.Values("Set-Cookie"))
	}
	s.Stop() // waits for the log phase
	logs := s.Logs.String()
	if strings.Contains(logs, "log phase could change") || !strings.Contains(logs, "log phase saw ann") {
		t.Errorf("log phase:\n%s", logs)
	}
}
