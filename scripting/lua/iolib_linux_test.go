package lua

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

// TestIOOpenRefuses: what no hook may open, in any sandbox mode, even
// inside its own directory: FIFOs (without blocking), devices, directories,
// /proc and /sys, links to them, and /proc magic links to a directory the
// server holds open (another tenant's files past their permissions).
func TestIOOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "other"), 0o755)
	os.WriteFile(filepath.Join(dir, "other/semi.txt"), []byte("semi"), 0o644)
	os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("ok"), 0o644)
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/proc/self/comm", filepath.Join(dir, "comm"))
	os.Symlink("/dev/null", filepath.Join(dir, "null"))
	held, err := os.Open(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	magic := "/proc/self/fd/" + strconv.Itoa(int(held.Fd())) + "/semi.txt"
	os.Symlink(magic, filepath.Join(dir, "magic"))
	os.Symlink("../other/semi.txt", filepath.Join(dir, "other", "up"))

	refused := []string{
		"fifo", "/proc/self/status", "/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/comm",
		"/sys/kernel/hostname", "/dev/null", "comm", "null", "other", magic, "magic", "/proc/../proc/self/environ",
	}
	var src strings.Builder
	src.WriteString("local out = {}\n")
	for _, p := range refused {
		for _, mode := range []string{"r", "w"} {
			src.WriteString("do local f = io.open(" + strconv.Quote(p) + ", \"" + mode + "\") if f then out[#out+1] = " +
				strconv.Quote(p+" "+mode) + " f:close() end end\n")
		}
	}
	src.WriteString(`local ok = {}
for _, p in ipairs({"ok.txt", "other/semi.txt", "other/up"}) do
  local f = io.open(p) if f then ok[#ok+1] = f:read("*a") f:close() end
end
local f = assert(io.open("new.txt", "w")) f:write("new") f:close()
assert(os.rename("new.txt", "other/new2.txt"))
assert(os.remove("other/new2.txt"))
local removed = os.remove(` + strconv.Quote(magic) + `)
local renamed = os.rename("ok.txt", ` + strconv.Quote(magic) + `)
r:write(table.concat(out, ","), "|", table.concat(ok, ","), "|", tostring(removed), tostring(renamed))`)
	hook := scriptingtest.WriteHook(t, filepath.Join(t.TempDir(), "h.lua"), src.String())
	e := New(scripting.Config{FS: scriptingtest.DirFS(t, dir, filepath.Dir(hook))})
	defer e.Close()
	body, _, err := runFile(e, hook)
	if err != nil {
		t.Fatal(err)
	}
	if want := "|ok,semi,semi|nilnil"; body != want {
		t.Errorf("got %q, want %q (opened: before the first |)", body, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "other/semi.txt")); err != nil {
		t.Errorf("semi.txt: %v", err)
	}
}

// runFile runs the hook file path on e once and returns the body.
func runFile(e *Engine, path string) (string, scripting.Result, error) {
	req := scriptingtest.NewRequest(scriptingtest.RequestOptions{})
	res, err := e.Run(context.Background(), scripting.PhaseContent, path, req)
	return req.Response(), res, err
}
