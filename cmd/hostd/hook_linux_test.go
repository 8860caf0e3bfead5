package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// hostdCmd runs the built binary with args in dir and returns its exit
// code, stdout and stderr.
func hostdCmd(t *testing.T, bin, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// TestHookRunAndCheck runs `hostd hook run` and `hostd hook check` on Lua
// and Ruby hooks with the real binary.
func TestHookRunAndCheck(t *testing.T) {
	dir := t.TempDir()
	bin := buildHostd(t, dir)
	writeFiles(t, dir, map[string]string{
		"hooks/a.lua": `r.headers_out["X-A"] = "1"
r:write(r.method, " ", r.path, " ", r.args.x, " ", r.headers_in["X-K"], " ", r.body)
hostd.log("info", "from the hook")`,
		"hooks/deny.rb":  "if r.headers_in[\"X-Token\"] != \"t\"\n  r.headers_out[\"X-Why\"] = r.phase\n  return 403\nend",
		"hooks/boom.lua": "local x = 1\nerror(\"boom\")\n",
		"hooks/bad.lua":  "r:write(\n\n",
		"hooks/bad.rb":   "def x\n",
		"body.txt":       "posted body",
	})
	code, out, errOut := hostdCmd(t, bin, dir, "hook", "run", "hooks/a.lua", "--method", "post", "--path", "/p?x=1",
		"--header", "X-K: v", "--body", "@body.txt")
	if code != 0 || out != "HTTP 200 OK\nX-A: 1\n\nPOST /p 1 v posted body" || !strings.Contains(errOut, "from the hook") ||
		!strings.Contains(errOut, "hook returned nothing") {
		t.Errorf("hook run a.lua: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = hostdCmd(t, bin, dir, "hook", "run", "--phase", "access", "hooks/deny.rb")
	if code != 0 || out != "HTTP 403 Forbidden\nX-Why: access\n\n" || !strings.Contains(errOut, "status 403") {
		t.Errorf("hook run deny.rb: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = hostdCmd(t, bin, dir, "hook", "run", "hooks/deny.rb", "--header", "X-Token:t", "--phase", "access")
	if code != 0 || !strings.Contains(errOut, "hook returned nothing") {
		t.Errorf("hook run deny.rb with the token: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = hostdCmd(t, bin, dir, "hook", "run", "hooks/boom.lua")
	if code != 1 || !strings.Contains(errOut, "boom.lua:2: boom") {
		t.Errorf("hook run boom.lua: exit %d, stderr %q", code, errOut)
	}
	code, _, _ = hostdCmd(t, bin, dir, "hook", "run")
	if code != 2 {
		t.Errorf("hook run without FILE: exit %d, want 2", code)
	}

	code, out, errOut = hostdCmd(t, bin, dir, "hook", "check", "hooks/a.lua", "hooks/bad.lua", "hooks/deny.rb", "hooks/bad.rb")
	if code != 1 || !strings.Contains(errOut, "hooks/bad.lua:3: syntax error") || !strings.Contains(errOut, "hooks/bad.rb:2: syntax error") ||
		strings.Contains(errOut, "a.lua") || !strings.Contains(out, "2 of 4 hooks have errors") {
		t.Errorf("hook check: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = hostdCmd(t, bin, dir, "hook", "check", "hooks/a.lua", "hooks/deny.rb")
	if code != 0 || out != "ok, 2 hooks\n" {
		t.Errorf("hook check of good hooks: exit %d, stdout %q", code, out)
	}
}

// TestHookRunAsTenant: as root, `hostd hook run --vhost-config` runs the
// hook with the vhost's user (its files are the tenant's, root's 0600 file
// is out of reach), and only when root or that user owns the vhost file.
func TestHookRunAsTenant(t *testing.T) {
	sandboxtest.RequireRoot(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	bin := buildHostd(t, dir)
	writeFiles(t, dir, map[string]string{
		"site/hooks/w.lua": `local f = assert(io.open("made.txt", "w")) f:write("x") f:close()
local s, err = io.open("` + filepath.Join(dir, "site/secret.txt") + `")
r:write(tostring(s), " ", tostring(err):match("permission denied") or tostring(err))`,
		"site/vhosts/vh.toml": "server_name = \"t.example\"\nroot = \"../pub\"\nuser = \"31001\"\nio_roots = [\"..\"]\n" +
			"[[hooks]]\nphase = \"content\"\nfile = \"../hooks/w.lua\"\n",
		"site/secret.txt": "root only\n",
	})
	os.Chmod(filepath.Join(dir, "site/secret.txt"), 0o600)
	pub := filepath.Join(dir, "site/pub")
	if err := os.Mkdir(pub, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(pub, 31001, 31001)
	vh := filepath.Join(dir, "site/vhosts/vh.toml")
	code, out, errOut := hostdCmd(t, bin, dir, "hook", "run", "site/hooks/w.lua", "--vhost-config", vh)
	if code != 0 || out != "HTTP 200 OK\n\nnil permission denied" || !strings.Contains(errOut, "ran as uid 31001 gid 31001") {
		t.Fatalf("hook run as the tenant: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	fi, err := os.Stat(filepath.Join(pub, "made.txt"))
	if err != nil || fileUID(fi) != 31001 {
		t.Errorf("the hook's file: %v, uid %d, want 31001", err, fileUID(fi))
	}
	// The tenant may own its vhost file; another user may not.
	for _, tc := range []struct {
		uid  int
		code int
	}{{31001, 0}, {31002, 1}} {
		os.Chown(vh, tc.uid, tc.uid)
		code, _, errOut := hostdCmd(t, bin, dir, "hook", "run", "site/hooks/w.lua", "--vhost-config", vh)
		if code != tc.code || (tc.code == 1 && !strings.Contains(errOut, "owned by neither root nor its tenant")) {
			t.Errorf("vhost file owned by %d: exit %d, stderr %q", tc.uid, code, errOut)
		}
	}
	// A tenant's link to the root-owned file (another tenant's identity)
	// is not followed.
	os.Chown(vh, 0, 0)
	link := filepath.Join(dir, "site/vhosts/mine.toml")
	if err := os.Symlink("vh.toml", link); err != nil {
		t.Fatal(err)
	}
	os.Lchown(link, 31002, 31002)
	code, _, errOut = hostdCmd(t, bin, dir, "hook", "run", "site/hooks/w.lua", "--vhost-config", link)
	if code != 1 || !strings.Contains(errOut, "too many levels of symbolic links") {
		t.Errorf("vhost file through a tenant's link: exit %d, stderr %q", code, errOut)
	}
}

func fileUID(fi os.FileInfo) int {
	if fi == nil {
		return -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
