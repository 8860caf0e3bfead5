package host_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

func hookSite(hooks string, scripts map[string]string) hosttest.Files {
	f := hosttest.Files{
		"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../pub\"\nrun_as_server = true\n[limits]\nscript_timeout = \"200ms\"\n" + hooks,
		"pub/index.html":  "static index\n",
		"pub/page.html":   "static page\n",
	}
	for name, src := range scripts {
		f["hooks/"+name] = src
	}
	return f
}

func TestHookPhasesEndToEnd(t *testing.T) {
	s := hosttest.Start(t, hookSite(`
[[hooks]]
phase = "log"
file = "../hooks/log.lua"
[[hooks]]
phase = "content"
file = "../hooks/content.lua"
path = "/api/*"
[[hooks]]
phase = "access"
file = "../hooks/access.lua"
[[hooks]]
phase = "rewrite"
file = "../hooks/rewrite.lua"
`, map[string]string{
		"rewrite.lua": `
r.vars.order = "rewrite"
if r.path == "/old" then r:set_path("/page.html") end
if r.path == "/go" then return r:redirect("https://b.example/", 301) end`,
		"access.lua": `
r.vars.order = r.vars.order .. ",access"
r.headers_out["X-Order"] = r.vars.order
if r.path == "/private" then return 403 end
if r.path == "/api/boom" then error("boom") end
if r.path == "/api/spin" then while true do end end`,
		"content.lua": `
if r.path == "/api/count" then r:write(tostring(hostd.shared:get("logged"))) return end
r.headers_out["Content-Type"] = "application/json"
r:write(hostd.json_encode({path = r.path, order = r.vars.order .. ",content", q = r.args.q}))`,
		"log.lua": `hostd.shared:incr("logged", 1, 0)`,
	}))
	c := s.Client("a.example", true)
	tests := []struct {
		path   string
		code   int
		body   string
		header string
	}{
		{"/", 200, "static index\n", "rewrite,access"},
		{"/old", 200, "static page\n", "rewrite,access"},
		{"/go", 301, "", ""},
		{"/private", 403, "Forbidden", "rewrite,access"},
		{"/api/x?q=1", 200, `{"order":"rewrite,access,content","path":"/api/x","q":"1"}`, "rewrite,access"},
		{"/api/boom", 500, "a hook script failed", ""},
		{"/api/spin", 503, "time limit", ""},
		{"/", 200, "static index\n", "rewrite,access"}, // still serving after a failure and a timeout
	}
	for _, tc := range tests {
		r := hosttest.Get(t, c, "https://a.example"+tc.path)
		if r.StatusCode != tc.code || !strings.Contains(r.Body, tc.body) {
			t.Errorf("GET %s: %d %q, want %d %q", tc.path, r.StatusCode, r.Body, tc.code, tc.body)
		}
		if tc.header != "" && r.Header.Get("X-Order") != tc.header {
			t.Errorf("GET %s: X-Order %q, want %q", tc.path, r.Header.Get("X-Order"), tc.header)
		}
		if strings.Contains(r.Body, "boom") || strings.Contains(r.Body, ".lua") {
			t.Errorf("GET %s: response leaks the error: %q", tc.path, r.Body)
		}
	}
	logs := s.Logs.String()
	if !strings.Contains(logs, "access.lua:5") || !strings.Contains(logs, "boom") {
		t.Errorf("error log lacks the script location:\n%s", logs)
	}
	if !strings.Contains(logs, "time limit") {
		t.Errorf("error log lacks the timeout:\n%s", logs)
	}
	// The log phase ran after each of the 8 responses, in the background.
	sandboxtest.WaitFor(t, "the log phase to count 8 responses", func() bool {
		n := hosttest.Get(t, c, "https://a.example/api/count").Body
		return n == "8" || n == "9"
	})
}

func TestHookRequestBodyLimit(t *testing.T) {
	files := hookSite(`
[[hooks]]
phase = "content"
file = "../hooks/echo.lua"
`, map[string]string{"echo.lua": `r:write(r.body)`})
	files["vhosts.d/a.toml"] = strings.Replace(files["vhosts.d/a.toml"], "[limits]\n", "[limits]\nmax_body = 10\n", 1)
	s := hosttest.Start(t, files)
	c := s.Client("a.example", false)
	req, _ := http.NewRequest("POST", "https://a.example/", strings.NewReader("0123456789"))
	if r := hosttest.Do(t, c, req); r.StatusCode != 200 || r.Body != "0123456789" {
		t.Errorf("body at the limit: %d %q", r.StatusCode, r.Body)
	}
	req, _ = http.NewRequest("POST", "https://a.example/", strings.NewReader("0123456789x"))
	if r := hosttest.Do(t, c, req); r.StatusCode != 413 {
		t.Errorf("body over the limit: %d %q", r.StatusCode, r.Body)
	}
}

func TestRubyHooksEndToEnd(t *testing.T) {
	s := hosttest.Start(t, hookSite(`
[[hooks]]
phase = "access"
file = "../hooks/access.rb"
[[hooks]]
phase = "content"
file = "../hooks/content.rb"
path = "/api/*"
`, map[string]string{
		"access.rb": `r.vars["seen"] = "access"
return 401 if r.path == "/private"
raise "boom" if r.path == "/api/boom"
loop {} if r.path == "/api/spin"
`,
		"content.rb": `r.headers_out["Content-Type"] = "application/json"
r.write(Hostd.json_encode({"path" => r.path, "seen" => r.vars["seen"], "n" => Hostd.shared.incr("n", 1)}))
`,
	}))
	c := s.Client("a.example", true)
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/", 200, "static index\n"},
		{"/private", 401, "Unauthorized"},
		{"/api/x", 200, `{"n":1,"path":"/api/x","seen":"access"}`},
		{"/api/boom", 500, "a hook script failed"},
		{"/api/spin", 503, "time limit"},
		{"/api/y", 200, `{"n":2,"path":"/api/y","seen":"access"}`},
	} {
		r := hosttest.Get(t, c, "https://a.example"+tc.path)
		if r.StatusCode != tc.code || !strings.Contains(r.Body, tc.body) {
			t.Errorf("GET %s: %d %q, want %d %q", tc.path, r.StatusCode, r.Body, tc.code, tc.body)
		}
	}
	if logs := s.Logs.String(); !strings.Contains(logs, "access.rb:3") || !strings.Contains(logs, "boom") {
		t.Errorf("error log lacks the script location:\n%s", logs)
	}
}
