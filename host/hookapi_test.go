package host_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
)

// TestHookCookiesWithSession: the session cookie and a hook's own
// cookies all reach the client, whichever the hook set first, also when
// the hook replaces Set-Cookie after using r.session and the response
// comes from the static handler after an access hook.
func TestHookCookiesWithSession(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"vhosts.d/a.toml": `server_name = "a.example"
root = "../pub"
run_as_server = true
[[hooks]]
phase = "access"
file = "../hooks/access.lua"
[[hooks]]
phase = "content"
file = "../hooks/content.rb"
path = "/app/*"
`,
		"pub/static.txt": "static",
		"hooks/access.lua": `
if r.path == "/static.txt" then
  r.session:set("seen", true)
  r.headers_out["Set-Cookie"] = "replaced=1" -- replaces every Set-Cookie
  r:set_cookie{name = "lang", value = "en", path = "/", http_only = true}
end
`,
		"hooks/content.rb": `
r.set_cookie(name: "first", value: "1")
r.session.set("user", "ann")
r.headers_out["Set-Cookie"] = ["replaced=2"]
r.set_cookie(name: "last", value: "3", secure: true, same_site: "Strict")
r.write("cookies=", r.cookies.keys.sort.join(","))
`,
	})
	c := s.Client("a.example", false)
	names := func(resp hosttest.Response) []string {
		var n []string
		for _, k := range resp.Cookies() {
			n = append(n, k.Name)
		}
		slices.Sort(n)
		return n
	}
	resp := getWithCookie(t, c, "https://a.example/static.txt", "")
	if resp.StatusCode != 200 || resp.Body != "static" {
		t.Fatalf("static: %d %q", resp.StatusCode, resp.Body)
	}
	if got := names(resp); !slices.Equal(got, []string{"hostd_session", "lang", "replaced"}) {
		t.Errorf("static: cookies %q", resp.Header.Values("Set-Cookie"))
	}
	ck := sessionCookie(t, resp)
	resp = getWithCookie(t, c, "https://a.example/app/x", ck+"; theme=dark")
	if resp.Body != "cookies=hostd_session,theme" {
		t.Errorf("content: body %q", resp.Body)
	}
	if got := names(resp); !slices.Equal(got, []string{"last", "replaced"}) {
		// The session id did not change: no session cookie is resent.
		t.Errorf("content: cookies %q", resp.Header.Values("Set-Cookie"))
	}
	resp = getWithCookie(t, c, "https://a.example/app/x", "")
	if got := names(resp); !slices.Equal(got, []string{"hostd_session", "last", "replaced"}) {
		t.Errorf("new session: cookies %q", resp.Header.Values("Set-Cookie"))
	}
	for _, v := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(v, "last=") && (!strings.Contains(v, "Secure") || !strings.Contains(v, "SameSite=Strict")) {
			t.Errorf("cookie flags: %q", v)
		}
	}
}

// TestHookPostArgs: r:post_args over a real request, with the per-part
// limit (max_form_part) answering 413.
func TestHookPostArgs(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"vhosts.d/a.toml": `server_name = "a.example"
root = "../pub"
run_as_server = true
[limits]
max_body = "64KiB"
max_form_part = "1KiB"
[[hooks]]
phase = "content"
file = "../hooks/form.lua"
`,
		"pub/": "",
		"hooks/form.lua": `
local a, err = r:post_args()
if not a then r.status = 400 r:write(err) return end
local f = a.file
r:write(a.title, " ", f.filename, " ", f.type, " ", f.size)
`,
	})
	c := s.Client("a.example", false)
	post := func(content string) hosttest.Response {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		mw.WriteField("title", "report")
		fw, _ := mw.CreateFormFile("file", "r.csv")
		fw.Write([]byte(content))
		mw.Close()
		req, _ := http.NewRequest("POST", "https://a.example/upload", &b)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		return hosttest.Do(t, c, req)
	}
	if r := post("a,b\n1,2\n"); r.StatusCode != 200 || r.Body != "report r.csv application/octet-stream 8" {
		t.Errorf("upload: %d %q", r.StatusCode, r.Body)
	}
	if r := post(strings.Repeat("x", 2048)); r.StatusCode != 413 {
		t.Errorf("part over max_form_part: %d %q", r.StatusCode, r.Body)
	}
	req, _ := http.NewRequest("POST", "https://a.example/upload", strings.NewReader("--b\r\nbroken"))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
	if r := hosttest.Do(t, c, req); r.StatusCode != 400 {
		t.Errorf("malformed: %d %q", r.StatusCode, r.Body)
	}
}
