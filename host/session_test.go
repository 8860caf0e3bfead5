package host_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/host/session/sessiontest"
)

// sessionHook logs in on /login?user=NAME (regenerating the id), logs out
// on /logout, and answers "user=NAME" elsewhere.
const sessionHook = `
if r.path == "/login" then
  r.session:regenerate_id()
  r.session:set("user", r.args.user)
  r:write("welcome ", r.args.user)
  return
end
if r.path == "/logout" then
  r.session:destroy()
  return 204
end
r:write("user=", tostring(r.session:get("user")))
`

// sessionVHost is a vhost file serving sessionHook for every path.
func sessionVHost(name, extra string) string {
	return fmt.Sprintf("server_name = %q\nroot = \"../pub\"\nrun_as_server = true\n%s\n[[hooks]]\nphase = \"content\"\nfile = \"../hooks/session.lua\"\n", name, extra)
}

// getWithCookie fetches url on c for host sni, sending cookie when set.
func getWithCookie(t *testing.T, c *http.Client, url, cookie string) hosttest.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	return hosttest.Do(t, c, req)
}

// sessionCookie returns "name=value" of the response's session cookie.
func sessionCookie(t *testing.T, resp hosttest.Response) string {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == "hostd_session" && c.Value != "" {
			if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
				t.Errorf("cookie attributes: %q", resp.Header.Values("Set-Cookie"))
			}
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("no session cookie in %q (status %d, body %q)", resp.Header.Values("Set-Cookie"), resp.StatusCode, resp.Body)
	return ""
}

func TestSessionsNamespacedPerVHost(t *testing.T) {
	rd := sessiontest.Redis(t)
	main := hosttest.MainConfig + fmt.Sprintf("[sessions]\nstore = \"redis\"\nurl = \"redis://%s/0\"\n", rd.Addr)
	s := hosttest.Start(t, hosttest.Files{
		"hostd.toml":        main,
		"vhosts.d/a.toml":   sessionVHost("a.example", ""),
		"vhosts.d/b.toml":   sessionVHost("b.example", ""),
		"pub/":              "",
		"hooks/session.lua": sessionHook,
	})
	a, b := s.Client("a.example", false), s.Client("b.example", false)
	login := getWithCookie(t, b, "https://b.example/login?user=bob", "")
	ck := sessionCookie(t, login)
	if got := getWithCookie(t, b, "https://b.example/", ck).Body; got != "user=bob" {
		t.Fatalf("b with its cookie: %q", got)
	}
	// B's cookie replayed on A's vhost (same Redis) gets nothing.
	if got := getWithCookie(t, a, "https://a.example/", ck).Body; got != "user=nil" {
		t.Fatalf("a with b's cookie: %q", got)
	}
	// Logout destroys it.
	if resp := getWithCookie(t, b, "https://b.example/logout", ck); resp.StatusCode != http.StatusNoContent ||
		!strings.Contains(strings.Join(resp.Header.Values("Set-Cookie"), ";"), "Max-Age=0") {
		t.Fatalf("logout: %d %q", resp.StatusCode, resp.Header.Values("Set-Cookie"))
	}
	if got := getWithCookie(t, b, "https://b.example/", ck).Body; got != "user=nil" {
		t.Fatalf("after logout: %q", got)
	}
}

func TestSessionStoreDownAndBack(t *testing.T) {
	rd := sessiontest.Redis(t)
	s := hosttest.Start(t, hosttest.Files{
		"vhosts.d/a.toml":   sessionVHost("a.example", fmt.Sprintf("[sessions]\nstore = \"redis\"\nurl = \"redis://%s/0\"\n", rd.Addr)),
		"pub/":              "",
		"hooks/session.lua": sessionHook,
	})
	c := s.Client("a.example", false)
	ck := sessionCookie(t, getWithCookie(t, c, "https://a.example/login?user=ann", ""))
	rd.Kill()
	for _, path := range []string{"/", "/login?user=eve"} {
		resp := getWithCookie(t, c, "https://a.example"+path, ck)
		if resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(resp.Body, "redis") {
			t.Fatalf("%s with redis down: %d %q", path, resp.StatusCode, resp.Body)
		}
	}
	if logs := s.Logs.String(); !strings.Contains(logs, "session store redis "+rd.Addr) {
		t.Errorf("log does not name the store:\n%s", logs)
	}
	if err := rd.Start(); err != nil {
		t.Fatal(err)
	}
	// Back by itself; this Redis lost its data, so log in again.
	ck = sessionCookie(t, getWithCookie(t, c, "https://a.example/login?user=ann", ck))
	if got := getWithCookie(t, c, "https://a.example/", ck).Body; got != "user=ann" {
		t.Fatalf("after recovery: %q", got)
	}
}
