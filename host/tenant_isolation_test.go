package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/host/admin"
	"github.com/hostd/hostd/host/hosttest"
)

// counterHook is a content hook answering its version and a count kept
// in the tenant's shared dictionary.
func counterHook(version string) string {
	return `local n = hostd.shared:incr("n", 1)
r:write("` + version + ` " .. n .. "\n")
`
}

// writeLater writes a file with a modification time distinct from the
// previous version's (the script cache keys versions by mtime and size).
func writeLater(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Duration(len(body)) * time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
}

// TestReloadIsolatesTenants is the operator's story: alice saves a broken
// hook and a changed vhost file, the operator adds carol and reloads.
// carol is added; alice keeps serving her last good version with her
// shared dictionary; the reload reports alice's error at FILE:LINE. Then
// alice fixes her vhost file but not the hook: her rebuilt vhost still
// runs the last good hook (never a 500) and keeps her dictionary. A hook
// that never compiled answers 503.
func TestReloadIsolatesTenants(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../pub\"\nrun_as_server = true\n[[hooks]]\nphase = \"content\"\nfile = \"../hooks/hello.lua\"\npath = \"/hello\"\n",
		"hooks/hello.lua":     counterHook("v1"),
		"pub/index.html":      "home\n",
	})
	ctx := context.Background()
	alice := s.Client("alice.example", false)
	get := func(url string) hosttest.Response { return hosttest.Get(t, alice, url) }
	for i, want := range []string{"v1 1\n", "v1 2\n"} {
		if r := get("https://alice.example/hello"); r.StatusCode != 200 || r.Body != want {
			t.Fatalf("request %d: %d %q", i, r.StatusCode, r.Body)
		}
	}

	hook := filepath.Join(s.Dir, "hooks", "hello.lua")
	aliceFile := filepath.Join(s.Dir, "vhosts.d", "alice.toml")
	writeLater(t, hook, "r:write(\"v2\"\n\n")
	hosttest.Write(t, s.Dir, hosttest.Files{
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\naliases = [\"www.alice.example\"]\nroot = \"../pub\"\nrun_as_server = true\n[[hooks]]\nphase = \"content\"\nfile = \"../hooks/hello.lua\"\npath = \"/hello\"\n",
		"vhosts.d/carol.toml": "server_name = \"carol.example\"\nroot = \"../pub\"\n",
	})
	res, err := adminOf(s).Reload(ctx)
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if res.Added != 1 || res.Kept != 1 || res.Changed != 0 || !res.Partial() {
		t.Errorf("reload: %+v", res)
	}
	var kept *admin.VHostChange
	for i := range res.VHosts {
		if res.VHosts[i].Action == admin.ChangeKept {
			kept = &res.VHosts[i]
		}
	}
	if kept == nil || kept.Name != "alice.example" || kept.File != aliceFile || len(kept.Errors) != 1 ||
		!strings.HasPrefix(kept.Errors[0], hook+":3: syntax error") {
		t.Fatalf("alice: %+v", kept)
	}
	if r := hosttest.Get(t, s.Client("carol.example", false), "https://carol.example/"); r.StatusCode != 200 || r.Body != "home\n" {
		t.Errorf("carol: %d %q", r.StatusCode, r.Body)
	}
	// alice: the previous version (no new alias), last good hook, same dictionary.
	if r := get("https://alice.example/hello"); r.StatusCode != 200 || r.Body != "v1 3\n" {
		t.Errorf("alice after the reload: %d %q", r.StatusCode, r.Body)
	}
	if r := hosttest.Get(t, s.Client("www.alice.example", false), "https://www.alice.example/"); r.StatusCode != 404 {
		t.Errorf("alice's new alias served: %d", r.StatusCode)
	}

	// alice's vhost file changes again and is valid; her hook, fixed at
	// reload time, breaks again right after: the rebuilt vhost falls back
	// to the last good compiled version, and the dictionary survives.
	writeLater(t, hook, counterHook("v3"))
	res, err = adminOf(s).Reload(ctx)
	if err != nil || res.Changed != 1 || res.Partial() {
		t.Fatalf("reload: %+v %v", res, err)
	}
	if r := get("https://alice.example/hello"); r.StatusCode != 200 || r.Body != "v3 4\n" {
		t.Errorf("alice rebuilt: %d %q", r.StatusCode, r.Body)
	}
	writeLater(t, aliceFile, "server_name = \"alice.example\"\nroot = \"../pub\"\nrun_as_server = true\nindex = [\"index.html\"]\n[[hooks]]\nphase = \"content\"\nfile = \"../hooks/hello.lua\"\npath = \"/hello\"\n")
	res, err = adminOf(s).Reload(ctx)
	if err != nil || res.Changed != 1 || res.Partial() {
		t.Fatalf("reload: %+v %v", res, err)
	}
	writeLater(t, hook, "r:write(\"v4\"\n\n\n")
	for i := range 2 {
		if r := get("https://alice.example/hello"); r.StatusCode != 200 || r.Body != "v3 "+string(rune('5'+i))+"\n" {
			t.Errorf("alice with a broken hook after a rebuild: %d %q", r.StatusCode, r.Body)
		}
	}
	// One line per broken version (v2, v4), not one per request.
	if n := strings.Count(s.Logs.String(), "lua hook has an error; still using the previous version"); n != 2 {
		t.Errorf("%d log lines for two broken versions, want 2", n)
	}

	// dave's hook compiles at reload, then breaks before its first run:
	// no version ever compiled, so 503 and a log line, never the content.
	hosttest.Write(t, s.Dir, hosttest.Files{
		"vhosts.d/dave.toml": "server_name = \"dave.example\"\nroot = \"../pub\"\nrun_as_server = true\n[[hooks]]\nphase = \"access\"\nfile = \"../hooks/dave.lua\"\n",
		"hooks/dave.lua":     "return 403\n",
	})
	if res, err := adminOf(s).Reload(ctx); err != nil || res.Added != 1 {
		t.Fatalf("reload: %+v %v", res, err)
	}
	writeLater(t, filepath.Join(s.Dir, "hooks", "dave.lua"), "return (\n")
	if r := hosttest.Get(t, s.Client("dave.example", false), "https://dave.example/"); r.StatusCode != 503 || strings.Contains(r.Body, "home") {
		t.Errorf("dave: %d %q", r.StatusCode, r.Body)
	}
	if !strings.Contains(s.Logs.String(), "dave.lua") {
		t.Errorf("no log line names dave's hook:\n%s", s.Logs.String())
	}
}
