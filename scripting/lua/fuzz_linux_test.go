package lua

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox/sandboxtest"
	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

// FuzzLuaHook runs generated and mutated hook sources through the real
// engine, in a child process (the test binary again, TestLuaFuzzChild) so
// that a crash of the engine (a fatal Go error, a runaway allocation, a
// hang) is reported with the input that caused it instead of killing the
// fuzzer. An input whose first byte is odd is a program generated from
// the bytes (genLua); otherwise it is Lua source. After each input the
// child runs a canary hook, so an engine left broken is found too. The
// seeds are testdata/luafuzz/*.lua and the shared case table's sources;
// `go test` runs them (and every crasher saved in testdata/fuzz) as
// regression tests, `make fuzz-lua` fuzzes.
func FuzzLuaHook(f *testing.F) {
	seeds, err := filepath.Glob("testdata/luafuzz/*.lua")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata/luafuzz: %v", err)
	}
	for _, p := range seeds {
		src, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{0}, src...))
	}
	for _, c := range scriptingtest.Cases() {
		if c.Lua != "" && len(c.Lua) < 4096 {
			f.Add(append([]byte{0}, c.Lua...))
		}
	}
	f.Add([]byte{1, 7, 3, 250, 9, 14, 2, 77, 5, 6, 200, 31, 4, 8})
	var ch fuzzChild
	f.Cleanup(ch.stop)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		src := in[1:]
		if in[0]&1 == 1 {
			src = []byte(genLua(in[1:]))
		}
		if err := ch.run(src); err != nil {
			t.Fatalf("engine failed on this hook:\n%s\n---\n%v", src, err)
		}
	})
}

// fuzzMaxRSS is the child's resident memory beyond which an input counts
// as a failure of the memory budget (the child's hooks have 16 MiB).
const fuzzMaxRSS = 1 << 30

// fuzzChild is the child process of one fuzzing process.
type fuzzChild struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
}

func (c *fuzzChild) start() error {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLuaFuzzChild$", "-test.count=1", "-test.v=false")
	cmd.Env = append(os.Environ(), "HOSTD_LUA_FUZZ_CHILD=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	c.stderr = new(bytes.Buffer)
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start fuzz child: %w", err)
	}
	c.cmd, c.in, c.out = cmd, in, bufio.NewReader(out)
	return nil
}

func (c *fuzzChild) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return
	}
	c.in.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill() // our own child, by PID
		<-done
	}
	c.cmd = nil
}

// run sends src to the child and waits for its verdict; an error is a
// crash, a hang, a broken engine or a memory blow-up, and the child is
// restarted for the next input.
func (c *fuzzChild) run(src []byte) error {
	c.mu.Lock()
	if c.cmd == nil {
		if err := c.start(); err != nil {
			c.mu.Unlock()
			return err
		}
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(src)))
	type answer struct {
		line string
		err  error
	}
	ans := make(chan answer, 1)
	in, out := c.in, c.out
	go func() { // the write too: a child stuck in a run does not read
		if _, err := in.Write(append(hdr[:], src...)); err != nil {
			ans <- answer{err: fmt.Errorf("write to child: %w", err)}
			return
		}
		l, err := out.ReadString('\n')
		ans <- answer{l, err}
	}()
	var a answer
	select {
	case a = <-ans:
	case <-time.After(60 * time.Second):
		a = answer{err: fmt.Errorf("child hung (no answer in 60s)")}
	}
	c.mu.Unlock()
	if a.err == nil && strings.HasPrefix(a.line, "ok ") {
		return nil
	}
	c.mu.Lock()
	cmd, stderr := c.cmd, c.stderr
	c.mu.Unlock()
	cmd.Process.Kill() // our own child, by PID
	msg := strings.TrimSpace(a.line)
	if a.err != nil {
		msg = a.err.Error()
	} else {
		// What the child printed as it died (a panic goes to stdout).
		rest, _ := io.ReadAll(io.LimitReader(out, 16<<10))
		msg += "\n" + string(rest)
	}
	c.stop()
	tail := stderr.String()
	if len(tail) > 4000 {
		tail = tail[:4000]
	}
	return fmt.Errorf("%s\nchild stderr:\n%s", msg, tail)
}

// TestLuaFuzzChild is the child process of FuzzLuaHook (it does nothing
// in a normal test run): it reads length-prefixed hook sources from stdin,
// runs each, then a canary, and answers one line per input: "ok ..." or
// what went wrong. It exits when stdin closes.
func TestLuaFuzzChild(t *testing.T) {
	if os.Getenv("HOSTD_LUA_FUZZ_CHILD") != "1" {
		t.Skip("the child process of FuzzLuaHook")
	}
	// The runs' CPU time is this thread's (a busy machine stretches the
	// wall-clock time of a niced fuzzer).
	runtime.LockOSThread()
	dir := t.TempDir()
	fsys := scriptingtest.DirFS(t, dir)
	pool := NewPool(2)
	defer pool.Close()
	canary := scriptingtest.WriteHook(t, filepath.Join(dir, "canary.lua"), `r:write("alive") return 200`)
	in := bufio.NewReader(os.Stdin)
	for n := 0; ; n++ {
		var hdr [4]byte
		if _, err := io.ReadFull(in, hdr[:]); err != nil {
			return
		}
		src := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(in, src); err != nil {
			return
		}
		// A fresh engine (and script cache) per input, confined to dir.
		e := pool.Engine(scripting.Config{
			HookDir: dir, FS: fsys,
			Limits: scripting.Limits{Timeout: 300 * time.Millisecond, MaxMemory: 16 << 20},
		})
		p := filepath.Join(dir, "hook"+strconv.Itoa(n)+".lua")
		if err := os.WriteFile(p, src, 0o644); err != nil {
			fmt.Printf("write hook: %v\n", err)
			return
		}
		start := threadCPU()
		_, err := e.Run(context.Background(), scripting.PhaseContent, p, scriptingtest.NewRequest(scriptingtest.RequestOptions{}))
		d := threadCPU() - start
		os.Remove(p)
		e.Close()
		// The canary checks the pool's VMs, not the clock: a generous
		// limit (a niced fuzzer on a busy machine gets little CPU).
		ce := pool.Engine(scripting.Config{HookDir: dir, FS: fsys, Limits: scripting.Limits{Timeout: time.Minute}})
		req := scriptingtest.NewRequest(scriptingtest.RequestOptions{})
		res, cerr := ce.Run(context.Background(), scripting.PhaseContent, canary, req)
		ce.Close()
		switch rss := sandboxtest.RSS(); {
		case cerr != nil || res.Status != 200 || req.Response() != "alive":
			fmt.Printf("canary failed after the input: %v %d %q\n", cerr, res.Status, req.Response())
		case d > 2*time.Second:
			fmt.Printf("run took %v of CPU against a 300ms limit\n", d)
		case rss > fuzzMaxRSS:
			fmt.Printf("child RSS %d bytes after the input\n", rss)
		default:
			fmt.Printf("ok %v\n", err != nil)
		}
	}
}

// threadCPU returns the CPU time the calling thread used so far.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rusageThread is RUSAGE_THREAD (Linux).
const rusageThread = 1

// genLua makes a Lua program from fuzz bytes: each byte picks a statement
// or expression form, so that mutated inputs stay mostly valid Lua and
// reach the VM and the library rather than the parser only.
func genLua(b []byte) string {
	g := &luaGen{b: b}
	var out strings.Builder
	out.WriteString("local a, b, c, t, s = 1, 2, 3, {}, \"x\"\n")
	for i := 0; i < 40 && g.more(); i++ {
		g.stmt(&out, 0)
	}
	return out.String()
}

type luaGen struct {
	b []byte
	i int
}

func (g *luaGen) more() bool { return g.i < len(g.b) }

func (g *luaGen) next() int {
	if g.i >= len(g.b) {
		return 0
	}
	v := int(g.b[g.i])
	g.i++
	return v
}

var genVars = []string{"a", "b", "c", "t", "s", "t[a]", "t.x", "t[#t+1]"}

var genCalls = []string{
	"string.rep(%s, %s)", "string.format(\"%%s%%d\", %s, 1)", "string.gsub(%s, \"x\", %s)",
	"string.find(%s, %s)", "string.match(tostring(%s), \".-(.)\")", "string.sub(%s, %s)",
	"table.concat({%s, %s})", "table.insert(t, %s)", "table.remove(t)", "tostring(%s)", "tonumber(%s)",
	"hostd.json_encode({%s})", "hostd.json_decode(%s)", "hostd.shared:set(tostring(%s), %s)",
	"hostd.shared:get(tostring(%s))", "hostd.shared:incr(\"n\", 1)", "pcall(error, %s)", "select('#', %s)",
	"setmetatable({}, {__index = function() return %s end}).x", "coroutine.wrap(function() coroutine.yield(%s) end)()",
	"string.byte(%s, 1, -1)", "unpack({%s, %s})", "math.floor(%s)", "#%s", "r:write(tostring(%s))",
	"string.upper(%s)", "string.reverse(%s)", "next({%s})", "type(%s)", "string.char(65, %s)",
}

var genOps = []string{"..", "+", "-", "*", "/", "%", "^", "==", "<", "and", "or"}

func (g *luaGen) expr(out *strings.Builder, depth int) {
	k := g.next()
	if depth > 4 {
		k %= 4
	}
	switch k % 9 {
	case 0:
		out.WriteString(strconv.Itoa(g.next() * g.next()))
	case 1:
		out.WriteString(strconv.Quote(strings.Repeat("x", g.next()%8)))
	case 2:
		out.WriteString(genVars[g.next()%5])
	case 3:
		out.WriteString("{")
		g.expr(out, depth+1)
		out.WriteString("}")
	case 4, 5:
		call := genCalls[g.next()%len(genCalls)]
		args := strings.Count(call, "%s") - strings.Count(call, "%%s")
		parts := make([]any, args)
		for i := range parts {
			var b strings.Builder
			g.expr(&b, depth+1)
			parts[i] = b.String()
		}
		fmt.Fprintf(out, "("+call+")", parts...)
	default:
		out.WriteString("(")
		g.expr(out, depth+1)
		out.WriteString(" " + genOps[g.next()%len(genOps)] + " ")
		g.expr(out, depth+1)
		out.WriteString(")")
	}
}

func (g *luaGen) stmt(out *strings.Builder, depth int) {
	k := g.next()
	if depth > 2 {
		k %= 3
	}
	switch k % 7 {
	case 0, 1:
		out.WriteString(genVars[g.next()%len(genVars)] + " = ")
		g.expr(out, depth)
	case 2:
		out.WriteString("pcall(function() return ")
		g.expr(out, depth)
		out.WriteString(" end)")
	case 3:
		fmt.Fprintf(out, "for i = 1, %d do\n", g.next()*g.next()%100000)
		g.stmt(out, depth+1)
		out.WriteString("\nend")
	case 4:
		out.WriteString("if ")
		g.expr(out, depth)
		out.WriteString(" then\n")
		g.stmt(out, depth+1)
		out.WriteString("\nelse\n")
		g.stmt(out, depth+1)
		out.WriteString("\nend")
	case 5:
		out.WriteString("while ")
		g.expr(out, depth)
		out.WriteString(" do\n")
		g.stmt(out, depth+1)
		out.WriteString(" break\nend")
	default:
		out.WriteString("local f = function(x) ")
		g.stmt(out, depth+1)
		out.WriteString(" return x end f(")
		g.expr(out, depth)
		out.WriteString(")")
	}
	out.WriteString("\n")
}
