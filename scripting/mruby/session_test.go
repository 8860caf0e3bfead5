//go:build cgo && !nomruby

package mruby

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
	run := scriptingtest.SessionRunner(t, e, mgr, "s.rb")
	req, err := run("", `r.session.set("user", "ann"); r.session.set("n", [1, 2, {"x" => true}])`)
	if err != nil {
		t.Fatal(err)
	}
	id := scriptingtest.SessionCookie(req.HeadersOut())
	if id == "" {
		t.Fatalf("no session cookie: %v", req.HeadersOut())
	}
	req, err = run(id, `r.write(r.session.get("user"), " ", r.session.get("n")[2]["x"], " ", r.session.get("none").inspect)`)
	if err != nil || req.Response() != "ann true nil" {
		t.Fatalf("second request: %q, %v", req.Response(), err)
	}
	if _, err = run(id, `r.session.set("big", "x" * 300)`); !errors.Is(err, scripting.ErrSessionTooLarge) {
		t.Fatalf("big value: %v", err)
	}
	req, err = run(id, `r.session.regenerate_id`)
	id2 := scriptingtest.SessionCookie(req.HeadersOut())
	if err != nil || id2 == "" || id2 == id {
		t.Fatalf("regenerate_id: %q %v", id2, err)
	}
	req, _ = run(id, `r.write(r.session.get("user").inspect)`)
	if req.Response() != "nil" {
		t.Errorf("old id still loads: %q", req.Response())
	}
	req, _ = run(id2, `r.session.delete("n"); r.write(r.session.get("user"), r.session.get("n").inspect)`)
	if req.Response() != "annnil" {
		t.Errorf("new id after delete: %q", req.Response())
	}
	req, err = run(id2, `r.session.destroy`)
	if err != nil || !strings.Contains(req.HeadersOut().Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("destroy: %v %v", req.HeadersOut(), err)
	}
	req, _ = run(id2, `r.write(r.session.get("user").inspect)`)
	if req.Response() != "nil" {
		t.Errorf("after destroy: %q", req.Response())
	}
	req, _ = run("", `begin; r.session.set("big", "x" * 300); rescue => e; r.write(e.class.to_s); end`)
	if req.Response() != "Hostd::Error" {
		t.Errorf("rescue: %q", req.Response())
	}
}
