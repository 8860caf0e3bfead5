package lua

import (
	"errors"
	"strings"
	"testing"

	"github.com/hostd/hostd/host/session"
	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

func TestSessionAPI(t *testing.T) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	mgr, err := session.NewManager(session.Options{Store: session.NewMemory(0), Namespace: "a.test", MaxBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	run := scriptingtest.SessionRunner(t, e, mgr, "s.lua")
	req, err := run("", `r.session:set("user", "ann"); r.session:set("n", {1, 2, {x = true}})`)
	if err != nil {
		t.Fatal(err)
	}
	id := scriptingtest.SessionCookie(req.HeadersOut())
	if id == "" {
		t.Fatalf("no session cookie: %v", req.HeadersOut())
	}
	sc := req.HeadersOut().Get("Set-Cookie")
	for _, want := range []string{"Secure", "HttpOnly", "SameSite=Lax", "Path=/"} {
		if !strings.Contains(sc, want) {
			t.Errorf("Set-Cookie %q lacks %s", sc, want)
		}
	}
	req, err = run(id, `r:write(r.session:get("user"), " ", tostring(r.session:get("n")[3].x), " ", tostring(r.session:get("none")))`)
	if err != nil || req.Response() != "ann true nil" {
		t.Fatalf("second request: %q, %v", req.Response(), err)
	}
	if req.HeadersOut().Get("Set-Cookie") != "" {
		t.Errorf("an existing session set a cookie again: %v", req.HeadersOut())
	}
	// Too large: an error, and the session stays as it was.
	_, err = run(id, `r.session:set("big", string.rep("x", 300))`)
	if !errors.Is(err, scripting.ErrSessionTooLarge) {
		t.Fatalf("big value: %v, want ErrSessionTooLarge", err)
	}
	req, err = run(id, `local ok, msg = pcall(function() r.session:set("big", string.rep("x", 300)) end)
r:write(tostring(ok), " ", r.session:get("user"), " ", tostring(r.session:get("big")))`)
	if err != nil || req.Response() != "false ann nil" {
		t.Fatalf("pcall big: %q, %v", req.Response(), err)
	}
	// regenerate_id: a new cookie, the old id is gone, the data moved.
	req, err = run(id, `r.session:regenerate_id()`)
	if err != nil {
		t.Fatal(err)
	}
	id2 := scriptingtest.SessionCookie(req.HeadersOut())
	if id2 == "" || id2 == id {
		t.Fatalf("regenerate_id: cookie %q (old %q)", id2, id)
	}
	req, _ = run(id, `r:write(tostring(r.session:get("user")))`)
	if req.Response() != "nil" {
		t.Errorf("old id still loads: %q", req.Response())
	}
	req, _ = run(id2, `r:write(tostring(r.session:get("user")))`)
	if req.Response() != "ann" {
		t.Errorf("new id: %q", req.Response())
	}
	// delete and destroy.
	req, _ = run(id2, `r.session:delete("user"); r:write(tostring(r.session:get("user")), " ", type(r.session:get("n")))`)
	if req.Response() != "nil table" {
		t.Errorf("delete: %q", req.Response())
	}
	req, err = run(id2, `r.session:destroy()`)
	if err != nil || !strings.Contains(req.HeadersOut().Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("destroy: %v %v", req.HeadersOut(), err)
	}
	req, _ = run(id2, `r:write(tostring(r.session:get("n")))`)
	if req.Response() != "nil" {
		t.Errorf("after destroy: %q", req.Response())
	}
	// Misuse is an error with a hint.
	for src, want := range map[string]string{
		`r.session.get("x")`:                  "call it with ':'",
		`r.session = 1`:                       "read-only",
		`r.session:set("f", print)`:           "r.session:set",
		`r:write("x"); r.session:set("a", 1)`: "already sent",
	} {
		if _, err := run("", src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}
