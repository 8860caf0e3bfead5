package lua

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

// writeHook writes src to dir/name and returns the path.
func writeHook(t testing.TB, dir, name, src string) string {
	t.Helper()
	return scriptingtest.WriteHook(t, filepath.Join(dir, name), src)
}

// runSrc writes src as a hook and runs it once on e in the content phase.
func runSrc(t testing.TB, e *Engine, src string) (*scriptingtest.Request, scripting.Result, error) {
	t.Helper()
	p := writeHook(t, t.TempDir(), "hook.lua", src)
	req := scriptingtest.NewRequest(scriptingtest.RequestOptions{})
	res, err := e.Run(context.Background(), scripting.PhaseContent, p, req)
	return req, res, err
}

func TestRemovedGlobals(t *testing.T) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	names := []string{
		"getfenv", "setfenv", "load", "loadstring", "loadfile", "dofile", "module",
		"rawset", "rawget", "rawequal", "newproxy", "collectgarbage", "debug", "package",
		"_printregs", "_GOPHER_LUA_VERSION", "channel",
		"io.popen", "io.stdin", "io.stdout", "io.stderr", "io.read", "io.write", "io.output", "io.input",
		"os.execute", "os.exit", "os.getenv", "os.setenv", "os.tmpname", "os.setlocale",
		"string.dump", "string.gfind", "string.__index", "math.randomseed",
	}
	for _, name := range names {
		src := fmt.Sprintf("r:write(type(%s))", name)
		req, _, err := runSrc(t, e, src)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := req.Response(); got != "nil" {
			t.Errorf("%s is a %s, want nil", name, got)
		}
	}
	for _, name := range []string{"string.format", "table.insert", "math.floor", "coroutine.wrap",
		"os.time", "os.date", "os.clock", "io.open", "io.lines", "pcall", "require", "hostd.json_encode"} {
		req, _, err := runSrc(t, e, fmt.Sprintf("r:write(type(%s))", name))
		if err != nil || req.Response() != "function" {
			t.Errorf("%s: got %q, %v; want a function", name, req.Response(), err)
		}
	}
}

// TestHardening runs each attack, which must fail, and then a probe on the
// same engine (one VM, MaxVMs 1) that must see nothing of it.
func TestHardening(t *testing.T) {
	attacks := []struct {
		name, src string
		wantErr   bool
	}{
		{"getfenv", `getfenv(0).leak = 1`, true},
		{"getfenv_func", `getfenv(print).leak = 1`, true},
		{"loadstring", `loadstring("leak = 1")()`, true},
		{"load", `load(function() return "leak = 1" end)()`, true},
		{"rawset", `rawset(_G, "leak", 1)`, true},
		{"string_field", `string.leak = 1`, true},
		{"string_metatable", `getmetatable("").__index.leak = 1`, true},
		{"string_index", `("").__index.leak = 1`, true},
		{"string_gfind", `string.gfind("a", "a")`, true},
		{"string_metatable_set", `setmetatable(getmetatable(""), {})`, true},
		{"setmetatable_G", `setmetatable(_G, {__index = function() return 1 end})`, true},
		{"hostd_field", `hostd.leak = 1`, true},
		{"hostd_func", `hostd.log = nil`, true},
		{"hostd_metatable", `setmetatable(hostd, {})`, true},
		{"shared_method", `hostd.shared.get = nil`, true},
		{"r_field", `r.method = "X"`, true},
		{"r_metatable", `getmetatable(r).__index = nil`, true},
		{"math_field", `math.leak = 1`, true},
		{"table_func", `table.insert = nil`, true},
		{"io_func", `io.open = nil`, true},
		{"os_func", `os.time = nil`, true},
		{"coroutine_func", `coroutine.wrap = nil`, true},
		{"global", `leak = 1`, false},
		{"G_global", `_G.leak = 1`, false},
		{"shadow_r", `r = nil; hostd = nil; string = nil`, false},
	}
	probe := `r:write(tostring(leak), tostring(string.leak), tostring(("").leak), tostring(hostd.leak),
tostring(math.leak), type(table.insert), type(io.open), type(os.time), type(coroutine.wrap),
type(hostd.log), type(hostd.shared.get), r.method, type(string))`
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			e := newEngine(scripting.Config{MaxVMs: 1})
			defer e.Close()
			_, _, err := runSrc(t, e, a.src)
			if a.wantErr && err == nil {
				t.Errorf("attack %q succeeded", a.src)
			}
			if !a.wantErr && err != nil {
				t.Errorf("attack %q: %v", a.src, err)
			}
			req, _, err := runSrc(t, e, probe)
			if err != nil {
				t.Fatalf("probe: %v", err)
			}
			if got := req.Response(); got != "nilnilnilnilnilfunctionfunctionfunctionfunctionfunctionfunctionGETtable" {
				t.Errorf("probe after %q: %q", a.src, got)
			}
		})
	}
}

func TestCoroutinesAreSafe(t *testing.T) {
	e := newEngine(scripting.Config{MaxVMs: 1})
	defer e.Close()
	// Coroutines work, r:exit inside one still ends the request, and
	// their number is bounded.
	req, _, err := runSrc(t, e, `
local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1); return b * 2 end)
r:write(co(1), ",", co(5))`)
	if err != nil || req.Response() != "2,10" {
		t.Fatalf("coroutine: %q, %v", req.Response(), err)
	}
	_, res, err := runSrc(t, e, `
local co = coroutine.create(function() r:exit(418) end)
coroutine.resume(co)
r:write("not reached")`)
	if err != nil || res.Status != 418 {
		t.Fatalf("exit in coroutine: %+v, %v", res, err)
	}
	// An error out of a coroutine leaves the VM usable.
	_, _, err = runSrc(t, e, `local co = coroutine.wrap(function() error("boom") end) co()`)
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("error in coroutine: %v", err)
	}
	req, _, err = runSrc(t, e, `r:write(tostring(coroutine.running()))
local co = coroutine.wrap(function() coroutine.yield(1) return 2 end)
r:write(co(), co())`)
	if err != nil || req.Response() != "nil12" {
		t.Fatalf("after an error in a coroutine: %q, %v", req.Response(), err)
	}
	_, _, err = runSrc(t, e, `for i = 1, 10000 do coroutine.create(function() end) end`)
	if err == nil || !strings.Contains(err.Error(), "too many coroutines") {
		t.Fatalf("coroutine limit: %v", err)
	}
	e2 := newEngine(scripting.Config{Limits: scripting.Limits{Timeout: 50 * time.Millisecond}})
	defer e2.Close()
	_, _, err = runSrc(t, e2, `local co = coroutine.wrap(function() while true do end end) co()`)
	if !errors.Is(err, scripting.ErrTimeout) {
		t.Fatalf("loop in coroutine: %v", err)
	}
}

func TestTimeoutWorkerSurvives(t *testing.T) {
	e := newEngine(scripting.Config{MaxVMs: 1, Limits: scripting.Limits{Timeout: 50 * time.Millisecond}})
	defer e.Close()
	for _, src := range []string{
		`while true do end`,
		`local function f() return f() end f()`,
		`local t = {} for i = 1, 1e12 do t[i % 1000] = i end`,
		// Catastrophic backtracking in a host function: the matcher
		// checks the deadline itself.
		`string.find(string.rep("a", 3000), ".-.-.-.-.-.-b")`,
		`for w in string.gmatch(string.rep("a", 3000), "(.-)(.-)(.-)(.-)b") do end`,
		`string.gsub(string.rep("a", 3000), ".-.-.-.-.-b", "x")`,
		// Slow host calls: the deadline is checked right after each.
		`while true do local s = string.rep("x", 4e6) end`,
		`local co = coroutine.create(function() while true do end end) coroutine.resume(co)`,
		`local co = coroutine.create(function() while true do coroutine.yield() end end) while true do coroutine.resume(co) end`,
	} {
		start := time.Now()
		_, _, err := runSrc(t, e, src)
		if !errors.Is(err, scripting.ErrTimeout) {
			t.Errorf("%s: err %v, want ErrTimeout", src, err)
		}
		var se *scripting.ScriptError
		if !errors.As(err, &se) || se.File == "" {
			t.Errorf("%s: %v is not a ScriptError with a file", src, err)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("%s: stopped after %v", src, d)
		}
		req, _, err := runSrc(t, e, `r:write("alive")`)
		if err != nil || req.Response() != "alive" {
			t.Fatalf("after %s: %q, %v", src, req.Response(), err)
		}
	}
}

func TestContextCancel(t *testing.T) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	p := writeHook(t, t.TempDir(), "loop.lua", `while true do end`)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	_, err := e.Run(ctx, scripting.PhaseContent, p, scriptingtest.NewRequest(scriptingtest.RequestOptions{}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestBoundedHostFunctions(t *testing.T) {
	e := newEngine(scripting.Config{Limits: scripting.Limits{MaxInput: 1 << 10, MaxMemory: 1 << 20, Timeout: 200 * time.Millisecond * raceSlowdown}})
	defer e.Close()
	for _, c := range []struct{ src, err string }{
		{`string.rep("x", 1e9)`, "string.rep"},
		{`("xy"):rep(1e9)`, "string.rep"},
		{`local t = {} local s = string.rep("x", 1000) for i = 1, 2000 do t[i] = s end table.concat(t)`, "table.concat"},
		{`string.format("%99999s%99999s%99999s%99999s", "", "", "", "")`, "string.format"},
		{`string.gsub(string.rep("x", 100000), ".", "%0%0%0%0%0%0%0%0%0%0%0")`, "string.gsub"},
		{`hostd.sha256(string.rep("x", 2000))`, "input limit"},
		{`hostd.json_encode({string.rep("x", 2000)})`, "json_encode"},
		{`local t = {} t.t = t hostd.json_encode(t)`, "json_encode"},
		{`string.find("x", string.rep("(", 40) .. "x" .. string.rep(")", 40))`, "captures"},
		{`string.find(string.rep("x", 300), string.rep("x?", 300))`, "too complex"},
		{`local function f(n) return 1 + f(n + 1) end f(1)`, "stack overflow"},
		{`unpack({}, 1, 1e7)`, "too many results"},
		{`string.byte(string.rep("x", 1e6), 1, -1)`, "hook.lua:1:"},
		{`local s = "x" for i = 1, 1e6 do s = s .. "x" end`, "time limit"},
	} {
		_, _, err := runSrc(t, e, c.src)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err %v, want one containing %q", c.src, err, c.err)
		}
	}
}

func TestPatterns(t *testing.T) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	for _, c := range []struct{ src, want string }{
		{`r:write(string.find("hello world", "wor"))`, "79"},
		{`r:write(string.find("a.b", ".", 1, true))`, "22"},
		{`r:write(string.find("hello", "l+"))`, "34"},
		{`r:write(tostring(string.find("hello", "^l")))`, "nil"},
		{`r:write(string.match("key=value", "(%w+)=(%w+)"))`, "keyvalue"},
		{`r:write(string.match("  trim  ", "^%s*(.-)%s*$"))`, "trim"},
		{`r:write(string.match("f(a(b)c)d", "%b()"))`, "(a(b)c)"},
		{`r:write(string.match("THE (quick) fox", "%f[%a]%a+", 5))`, "quick"},
		{`r:write(string.match("hello", "()ll()"))`, "35"},
		{`r:write(string.match("abcabc", "(abc)%1"))`, "abc"},
		{`r:write(string.match("2024-01-05", "(%d+)-(%d+)-(%d+)"))`, "20240105"},
		{`r:write(string.match("x", "[%]x]"), string.match("]", "[]]"), string.match("b", "[^a]"))`, "x]b"},
		{`r:write(string.match("a-z", "[a%-z]+"))`, "a-z"},
		{`r:write(tostring(string.match("abc", "^b")), string.match("abc", "c$"))`, "nilc"},
		{`local t = {} for k, v in string.gmatch("a=1, b=2", "(%w+)=(%w+)") do t[#t+1] = k .. v end r:write(table.concat(t, ";"))`, "a1;b2"},
		{`local n = 0 for w in ("one two  three"):gmatch("%a+") do n = n + 1 end r:write(n)`, "3"},
		{`r:write(string.gsub("hello world", "o", "0"))`, "hell0 w0rld2"},
		{`r:write(string.gsub("hello world", "(%w+)", "<%1>"))`, "<hello> <world>2"},
		{`r:write(string.gsub("abc", "", "-"))`, "-a-b-c-4"},
		{`r:write(string.gsub("$name is $age", "%$(%w+)", {name = "Al", age = 3}))`, "Al is 32"},
		{`r:write(string.gsub("1 2 3", "%d", function(d) return d * 2 end))`, "2 4 63"},
		{`r:write(string.gsub("a b c", "%w", "%%", 2))`, "% % c2"},
		{`r:write(unpack({"a", "b", "c"}, 2))`, "bc"},
		{`r:write(select("#", unpack({})))`, "0"},
		{`r:write(("x"):upper(), ("%d"):format(7), ("abc"):sub(2), #("abc"):rep(3))`, "X7bc9"},
	} {
		req, _, err := runSrc(t, e, c.src)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		if got := req.Response(); got != c.want {
			t.Errorf("%s: got %q, want %q", c.src, got, c.want)
		}
	}
}

func TestReloadOnChange(t *testing.T) {
	var logBuf bytes.Buffer
	e := newEngine(scripting.Config{Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	defer e.Close()
	dir := t.TempDir()
	p := filepath.Join(dir, "hook.lua")
	run := func() (string, error) {
		req := scriptingtest.NewRequest(scriptingtest.RequestOptions{})
		_, err := e.Run(context.Background(), scripting.PhaseContent, p, req)
		return req.Response(), err
	}
	mtime := time.Now().Add(-time.Hour)
	write := func(src string) {
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		mtime = mtime.Add(time.Second)
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	write(`r:write("v1")`)
	if got, err := run(); err != nil || got != "v1" {
		t.Fatalf("v1: %q, %v", got, err)
	}
	write(`r:write("v2")`) // same size, new mtime
	if got, err := run(); err != nil || got != "v2" {
		t.Fatalf("v2: %q, %v", got, err)
	}
	write("r:write(\"v3\")\nif then\n")
	for i := 0; i < 3; i++ {
		if got, err := run(); err != nil || got != "v2" {
			t.Fatalf("broken v3, run %d: %q, %v (want the old version)", i, got, err)
		}
	}
	if n := strings.Count(logBuf.String(), "hook.lua:2:"); n != 1 {
		t.Errorf("syntax error logged %d times with file:line, want once; log:\n%s", n, logBuf.String())
	}
	err := e.Check(p)
	var se *scripting.ScriptError
	if !errors.As(err, &se) || se.Line != 2 || se.File != p {
		t.Fatalf("Check: %#v", err)
	}
	if !strings.HasPrefix(err.Error(), p+":2: ") {
		t.Errorf("Check error %q lacks the file:line prefix", err)
	}
	write(`r:write("v4")`)
	if got, err := run(); err != nil || got != "v4" {
		t.Fatalf("v4: %q, %v", got, err)
	}
	if err := e.Check(p); err != nil {
		t.Fatalf("Check of a good file: %v", err)
	}
}

func TestBrokenFirstVersion(t *testing.T) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	_, _, err := runSrc(t, e, "local x = \n\n)")
	var se *scripting.ScriptError
	if !errors.As(err, &se) || se.Line != 3 {
		t.Fatalf("err %#v, want a ScriptError at line 3", err)
	}
	_, err = e.Run(context.Background(), scripting.PhaseContent, filepath.Join(t.TempDir(), "missing.lua"),
		scriptingtest.NewRequest(scriptingtest.RequestOptions{}))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing hook: %v", err)
	}
}

func TestConcurrentRuns(t *testing.T) {
	e := newEngine(scripting.Config{MaxVMs: 3})
	defer e.Close()
	dir := t.TempDir()
	a := writeHook(t, dir, "a.lua", `
if mine ~= nil then error("global leaked") end
mine = r.headers_in["X-Id"]
local n = hostd.shared:incr("runs", 1)
for i = 1, 100 do local s = ("x"):rep(i) end
r.vars.id = mine
r:write(mine)`)
	b := writeHook(t, dir, "b.lua", `if mine ~= nil then error("global leaked") end mine = "b" r:write("b")`)
	const workers, runs = 8, 200
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < runs; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				req := scriptingtest.NewRequest(scriptingtest.RequestOptions{Headers: map[string]string{"X-Id": id}})
				path, want := a, id
				if i%3 == 0 {
					path, want = b, "b"
				}
				if _, err := e.Run(context.Background(), scripting.PhaseContent, path, req); err != nil {
					errc <- err
					return
				}
				if req.Response() != want {
					errc <- fmt.Errorf("got %q, want %q", req.Response(), want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

func TestRequire(t *testing.T) {
	dir := t.TempDir()
	writeHook(t, dir, "lib/util.lua", `local M = {} function M.greet(n) return "hi " .. n end helper_global = 1 return M`)
	writeHook(t, dir, "self.lua", `require("self")`)
	e := newEngine(scripting.Config{HookDir: dir})
	defer e.Close()
	p := writeHook(t, dir, "hook.lua", `local u = require("lib.util") local u2 = require("lib.util")
r:write(u.greet("bob"), " ", tostring(u == u2), " ", helper_global)`)
	req := scriptingtest.NewRequest(scriptingtest.RequestOptions{})
	if _, err := e.Run(context.Background(), scripting.PhaseContent, p, req); err != nil || req.Response() != "hi bob true 1" {
		t.Fatalf("require: %q, %v", req.Response(), err)
	}
	for _, c := range []struct{ src, err string }{
		{`require("../etc/passwd")`, "invalid module name"},
		{`require("/etc/passwd")`, "invalid module name"},
		{`require("nope")`, "not found"},
		{`require("self")`, "requires itself"},
	} {
		p := writeHook(t, dir, "bad.lua", c.src)
		_, err := e.Run(context.Background(), scripting.PhaseContent, p, scriptingtest.NewRequest(scriptingtest.RequestOptions{}))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.src, err, c.err)
		}
	}
	e2 := newEngine(scripting.Config{})
	defer e2.Close()
	if _, _, err := runSrc(t, e2, `require("lib.util")`); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Errorf("require without HookDir: %v", err)
	}
}

func TestIOFiles(t *testing.T) {
	e := newEngine(scripting.Config{MaxVMs: 1})
	defer e.Close()
	dir := t.TempDir()
	data := filepath.Join(dir, "data.txt")
	src := fmt.Sprintf(`
local f = assert(io.open(%[1]q, "w"))
f:write("a\n", 42, "\n", "tail")
f:close()
local n = 0
for line in io.lines(%[1]q) do n = n + 1 end
local g = assert(io.open(%[1]q))
local a, b = g:read("*l", "*n")
g:seek("set", 0)
local two = g:read(2)
r:write(n, " ", a, " ", b, " ", two, " ", io.type(g))
g:close()
r:write(" ", io.type(g), " ", tostring(io.type(42)))
`, data)
	req, _, err := runSrc(t, e, src)
	if err != nil || req.Response() != "3 a 42 a\n file closed file nil" {
		t.Fatalf("got %q, %v", req.Response(), err)
	}
	// Files left open are closed at the end of the run.
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(ents)
	}
	before := fds()
	leak := writeHook(t, dir, "leak.lua", fmt.Sprintf(`for i = 1, 10 do io.open(%q) end`, data))
	for i := 0; i < 50; i++ {
		if _, err := e.Run(context.Background(), scripting.PhaseContent, leak, scriptingtest.NewRequest(scriptingtest.RequestOptions{})); err != nil {
			t.Fatal(err)
		}
	}
	if after := fds(); after > before+5 {
		t.Errorf("open fds grew from %d to %d", before, after)
	}
	_, _, err = runSrc(t, e, fmt.Sprintf(`for i = 1, 100 do assert(io.open(%q)) end`, data))
	if err == nil || !strings.Contains(err.Error(), "too many open files") {
		t.Errorf("open file limit: %v", err)
	}
}

func TestClose(t *testing.T) {
	e := newEngine(scripting.Config{})
	if _, _, err := runSrc(t, e, `r:write("x")`); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runSrc(t, e, `r:write("x")`); err == nil {
		t.Fatal("Run after Close succeeded")
	}
}

// newEngine is New with a file gate over the whole file system when cfg
// has none (the tests' hooks live in temporary directories).
func newEngine(cfg scripting.Config) *Engine {
	if cfg.FS == nil {
		cfg.FS = scriptingtest.RootFS()
	}
	return New(cfg)
}

// TestHookReadThroughGate: a hook or module that is a symbolic link out of
// the tenant's directories is not read (so no syntax error can quote a
// file the tenant may not read), whatever identity the server has.
func TestHookReadThroughGate(t *testing.T) {
	hooks, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "shadow")
	if err := os.WriteFile(secret, []byte("root:$6$SECRETHASH:19000::::::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hook.lua", "mod.lua"} {
		if err := os.Symlink(secret, filepath.Join(hooks, name)); err != nil {
			t.Fatal(err)
		}
	}
	main := writeHook(t, hooks, "main.lua", `local ok, err = pcall(require, "mod") r:write(tostring(ok), " ", err)`)
	e := newEngine(scripting.Config{HookDir: hooks, FS: scriptingtest.DirFS(t, hooks)})
	defer e.Close()
	for _, err := range []error{e.Check(filepath.Join(hooks, "hook.lua")), runErr(e, filepath.Join(hooks, "hook.lua"))} {
		var se *scripting.ScriptError
		if !errors.As(err, &se) || se.Msg != "cannot open hook" || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("symlinked hook: %v", err)
		}
	}
	req := scriptingtest.NewRequest(scriptingtest.RequestOptions{})
	if _, err := e.Run(context.Background(), scripting.PhaseContent, main, req); err != nil {
		t.Fatal(err)
	}
	if body := req.Response(); !strings.HasPrefix(body, "false ") || strings.Contains(body, "SECRET") {
		t.Errorf("require of a symlinked module: %q", body)
	}
}

func runErr(e *Engine, path string) error {
	_, err := e.Run(context.Background(), scripting.PhaseContent, path, scriptingtest.NewRequest(scriptingtest.RequestOptions{}))
	return err
}
