package scriptingtest

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostd/hostd/scripting"
)

func basicAuth(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// Example returns the absolute path of examples/hooks/<lang>/name, for a
// test in a package two levels below the module root (scripting/<engine>).
func Example(t testing.TB, lang, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "examples", "hooks", lang, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// RunExamples runs the hook examples in examples/hooks/<lang>/ (name.ext)
// through the engines newEngine makes, with the same expectations for
// every language. dir is the examples directory of the language.
func RunExamples(t *testing.T, newEngine func() scripting.Engine, dir, ext string) {
	type step struct {
		req       RequestOptions
		status    int               // Result.Status
		body      string            // exact body, or a substring when prefixed with "~"
		headers   map[string]string // response headers ("" : absent)
		path      string            // path after the run
		vars      map[string]any
		logHas    string
		repeatRun int // run this many times first (rate limit)
	}
	cases := []struct {
		file  string
		phase scripting.Phase
		steps []step
	}{
		{"hello", scripting.PhaseContent, []step{
			{body: "Hello, world!\n", headers: map[string]string{"Content-Type": "text/plain"}},
		}},
		{"redirect", scripting.PhaseRewrite, []step{
			{req: RequestOptions{Scheme: "http", Host: "example.com", URI: "/a?b=1"}, status: 301,
				headers: map[string]string{"Location": "https://example.com/a?b=1"}},
			{req: RequestOptions{URI: "/blog/2024/post.html?x=1"}, status: 301,
				headers: map[string]string{"Location": "/articles/2024/post.html?x=1"}},
			{req: RequestOptions{URI: "/docs/v1/intro"}, status: 301,
				headers: map[string]string{"Location": "/docs/intro"}},
			{req: RequestOptions{URI: "/other"}, status: 0, headers: map[string]string{"Location": ""}},
		}},
		{"basic_auth", scripting.PhaseAccess, []step{
			{status: 401, headers: map[string]string{"WWW-Authenticate": `Basic realm="members", charset="UTF-8"`}},
			{req: RequestOptions{Headers: map[string]string{"Authorization": basicAuth("alice", "wonderland")}},
				status: 0, vars: map[string]any{"user": "alice"}},
			{req: RequestOptions{Headers: map[string]string{"Authorization": basicAuth("bob", "builder")}},
				status: 0, vars: map[string]any{"user": "bob"}},
			{req: RequestOptions{Headers: map[string]string{"Authorization": basicAuth("alice", "wrong")}}, status: 401},
			{req: RequestOptions{Headers: map[string]string{"Authorization": basicAuth("mallory", "x")}}, status: 401},
		}},
		{"access_ip", scripting.PhaseAccess, []step{
			{req: RequestOptions{RemoteAddr: "127.0.0.1"}, status: 0},
			{req: RequestOptions{RemoteAddr: "10.1.2.3"}, status: 0},
			{req: RequestOptions{RemoteAddr: "2001:db8::5"}, status: 0},
			{req: RequestOptions{RemoteAddr: "127.0.0.10"}, status: 403},
			{req: RequestOptions{RemoteAddr: "203.0.113.9"}, status: 403, logHas: "access denied for 203.0.113.9"},
		}},
		{"rate_limit", scripting.PhaseAccess, []step{
			{req: RequestOptions{RemoteAddr: "198.51.100.1"}, status: 0,
				headers: map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59"}},
			{req: RequestOptions{RemoteAddr: "198.51.100.1"}, repeatRun: 59, status: 429,
				headers: map[string]string{"X-RateLimit-Remaining": "0"}},
			{req: RequestOptions{RemoteAddr: "198.51.100.2"}, status: 0,
				headers: map[string]string{"X-RateLimit-Remaining": "59"}},
		}},
		{"vhost", scripting.PhaseRewrite, []step{
			{req: RequestOptions{Host: "Blog.Example.com:8443", URI: "/post.html?p=1"}, status: 0,
				path: "/sites/blog/post.html", vars: map[string]any{"site": "blog"}},
			{req: RequestOptions{Host: "example.com", URI: "/"}, status: 0, path: "/sites/www/"},
			{req: RequestOptions{Host: "unknown.example.net", URI: "/"}, status: 404, path: "/"},
		}},
		{"json_api", scripting.PhaseContent, []step{
			{req: RequestOptions{URI: "/api/info?x=1", Headers: map[string]string{"User-Agent": "test/1"}},
				body:    `~"args":{"x":"1"},"client":"192.0.2.1","method":"GET","path":"/api/info"`,
				headers: map[string]string{"Content-Type": "application/json"}},
			{req: RequestOptions{Method: "POST", URI: "/api/sum", Body: `{"numbers":[1,2,3.5]}`},
				body: `{"sum":6.5}`},
			{req: RequestOptions{Method: "POST", URI: "/api/sum", Body: `{"numbers":`},
				body: `~"error"`},
			{req: RequestOptions{Method: "GET", URI: "/api/sum"}, body: `{"error":"use POST"}`,
				headers: map[string]string{"Allow": "POST"}},
			{req: RequestOptions{URI: "/nope"}, body: `{"error":"not found"}`},
		}},
	}
	for _, c := range cases {
		t.Run(c.file+ext, func(t *testing.T) {
			e := newEngine()
			defer e.Close()
			path, err := filepath.Abs(filepath.Join(dir, c.file+ext))
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Check(path); err != nil {
				t.Fatalf("Check: %v", err)
			}
			for i, s := range c.steps {
				for range s.repeatRun {
					if _, err := e.Run(context.Background(), c.phase, path, NewRequest(s.req)); err != nil {
						t.Fatal(err)
					}
				}
				req := NewRequest(s.req)
				res, err := e.Run(context.Background(), c.phase, path, req)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if res.Status != s.status {
					t.Errorf("step %d: status %d, want %d", i, res.Status, s.status)
				}
				if want, ok := strings.CutPrefix(s.body, "~"); ok {
					if !strings.Contains(req.Response(), want) {
						t.Errorf("step %d: body %q does not contain %q", i, req.Response(), want)
					}
				} else if req.Response() != s.body {
					t.Errorf("step %d: body %q, want %q", i, req.Response(), s.body)
				}
				for k, v := range s.headers {
					if got := req.HeadersOut().Get(k); got != v {
						t.Errorf("step %d: header %s = %q, want %q", i, k, got, v)
					}
				}
				if s.path != "" && req.Path() != s.path {
					t.Errorf("step %d: path %q, want %q", i, req.Path(), s.path)
				}
				for k, v := range s.vars {
					if got := req.Vars()[k]; got != v {
						t.Errorf("step %d: vars[%s] = %#v, want %#v", i, k, got, v)
					}
				}
				if s.logHas != "" && !strings.Contains(req.LogText(), s.logHas) {
					t.Errorf("step %d: log %q lacks %q", i, req.LogText(), s.logHas)
				}
			}
		})
	}
}
