//go:build cgo && !nomruby

package mruby

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

// writeHook writes src to name in dir and returns its path.
func writeHook(t testing.TB, dir, name, src string) string {
	t.Helper()
	return scriptingtest.WriteHook(t, filepath.Join(dir, name), src)
}

// run runs src (written to a fresh file) once on e and returns the body.
func run(t testing.TB, e *Engine, dir, name, src string) (string, scripting.Result, error) {
	t.Helper()
	p := writeHook(t, dir, name, src)
	req := scriptingtest.NewRequest(scriptingtest.RequestOptions{})
	res, err := e.Run(context.Background(), scripting.PhaseContent, p, req)
	return req.Response(), res, err
}

// TestIsolation runs a script that defines or changes something, then
// another script (and the same one again) that must not see it. Each step
// runs on the same engine with one VM, so both runs share the mrb_state.
func TestIsolation(t *testing.T) {
	cases := []struct {
		name   string
		first  string // may fail; its error is ignored
		second string
		want   string
	}{
		{"global", `$g = "leak"`, `r.write($g.inspect)`, "nil"},
		{"top-level method", `def helper; "leak"; end`, `r.write(respond_to?(:helper, true).to_s)`, "false"},
		{"top-level constant", `SECRET = "leak"`, `r.write(Object.const_defined?(:SECRET).to_s + " " + self.class.const_defined?(:SECRET).to_s)`, "false false"},
		{"instance variable of self", `@x = "leak"`, `r.write(@x.inspect)`, "nil"},
		{"class variable", `@@cv = "leak"`, `r.write(self.class.class_variable_defined?(:@@cv).to_s)`, "false"},
		{"class definition", "class Foo; def hi; \"leak\"; end; end", "begin\n  Foo\n  r.write(\"leak\")\nrescue NameError\n  r.write(\"nil\")\nend", "nil"},
		{"module definition", "module M; X = 1; end", "begin\n  M\n  r.write(\"leak\")\nrescue NameError\n  r.write(\"nil\")\nend", "nil"},
		{"Object.const_set", `Object.const_set(:LEAK, 1)`, `r.write(Object.const_defined?(:LEAK).to_s)`, "false"},
		{"::CONST", `::LEAK2 = 1`, `r.write(Object.const_defined?(:LEAK2).to_s)`, "false"},
		{"reopen String", "class ::String; def size; 0; end; end", `r.write("abc".size.to_s)`, "3"},
		{"class String inside the run", "class String; def size; 0; end; end\nraise 'changed' if 'abc'.size == 0", `r.write("abc".size.to_s)`, "3"},
		{"String.class_eval", `String.class_eval { def size; 0; end }`, `r.write("abc".size.to_s)`, "3"},
		{"define_method", `String.send(:define_method, :leak) { 1 }`, `r.write("".respond_to?(:leak).to_s)`, "false"},
		{"remove_method", `Array.send(:remove_method, :push)`, `r.write([].push(1).inspect)`, "[1]"},
		{"alias_method", `Integer.send(:alias_method, :+, :-)`, `r.write((1 + 1).to_s)`, "2"},
		{"singleton method on a class", `def Integer.leak; 1; end`, `r.write(Integer.respond_to?(:leak).to_s)`, "false"},
		{"include into Object", "module Leaky; def leaky; 1; end; end\nObject.include(Leaky)", `r.write(respond_to?(:leaky).to_s)`, "false"},
		{"prepend into String", "module P; def size; 0; end; end\nString.prepend(P)", `r.write("abc".size.to_s)`, "3"},
		{"Kernel method", "module ::Kernel; def leak; 1; end; end", `r.write(respond_to?(:leak, true).to_s)`, "false"},
		{"Comparable", `Comparable.module_eval { def leak; 1; end }`, `r.write(1.respond_to?(:leak).to_s)`, "false"},
		{"Hostd module", `def Hostd.log(*a); end`, `r.write(Hostd.method(:log).owner.inspect)`, "#<Class:Hostd>"},
		{"Hostd constant", `Hostd.const_set(:LEAK, 1)`, `r.write(Hostd.const_defined?(:LEAK).to_s)`, "false"},
		{"Hostd::Script method", "class Hostd::Script; def leak; 1; end; end", `r.write(respond_to?(:leak).to_s)`, "false"},
		{"request object ivar", `r.instance_variable_set(:@leak, 1)`, `r.write(r.instance_variable_get(:@leak).inspect)`, "nil"},
		{"frozen constant string", `RUBY_VERSION << "-leak"`, `r.write(RUBY_VERSION.include?("leak").to_s)`, "false"},
		{"Struct named class", `Struct.new("Leak", :a)`, `r.write(Struct.const_defined?(:Leak).to_s)`, "false"},
		{"srand", `srand(7)`, "a = rand(1 << 30)\nsrand(7)\nr.write((a == rand(1 << 30)).to_s)", "false"},
		{"GC.disable", `GC.disable rescue nil`, `r.write(GC.respond_to?(:disable).to_s)`, "false"},
		{"ivar on a constant's object", `RUBY_VERSION.instance_variable_set(:@x, 1) rescue nil`, `r.write(RUBY_VERSION.instance_variable_get(:@x).inspect)`, "nil"},
	}
	// One tenant's engine with one VM; then two tenants' engines sharing
	// a pool of one VM (carol runs first, dave second, on the same
	// mrb_state).
	pool := NewPool(1)
	defer pool.Close()
	engines := map[string]func() (first, second *Engine){
		"same tenant": func() (*Engine, *Engine) {
			e := newEngine(scripting.Config{MaxVMs: 1})
			return e, e
		},
		"across tenants": func() (*Engine, *Engine) {
			return pool.Engine(scripting.Config{FS: scriptingtest.RootFS()}), pool.Engine(scripting.Config{FS: scriptingtest.RootFS()})
		},
	}
	for how, mk := range engines {
		for _, c := range cases {
			t.Run(how+"/"+c.name, func(t *testing.T) {
				carol, dave := mk()
				defer carol.Close()
				defer dave.Close()
				dir := t.TempDir()
				run(t, carol, dir, "first.rb", c.first)
				for i := range 2 { // another script, then the first one's file again
					name := "second.rb"
					if i == 1 {
						name = "first.rb"
					}
					body, _, err := run(t, dave, dir, name, c.second)
					if err != nil {
						t.Fatalf("run %d: %v", i, err)
					}
					if body != c.want {
						t.Errorf("run %d: got %q, want %q", i, body, c.want)
					}
				}
			})
		}
	}
}

// TestCoreIsFrozen checks that changing a core class fails inside the run
// that tries, with FrozenError.
func TestCoreIsFrozen(t *testing.T) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	for _, src := range []string{
		"class ::String; def size; 0; end; end",
		"String.class_eval { def size; 0; end }",
		"Object.const_set(:X, 1)",
		"def Hostd.time; 0; end",
	} {
		_, _, err := run(t, e, t.TempDir(), "h.rb", src)
		if err == nil || !strings.Contains(err.Error(), "FrozenError") {
			t.Errorf("%s: got %v, want a FrozenError", src, err)
		}
	}
}

// TestSandbox checks that the gems that reach outside the VM are not
// built in.
func TestSandbox(t *testing.T) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	cases := []struct{ src, want string }{
		// File and Dir are hostd's, over the tenant's file gate (files.go):
		// no IO underneath, no descriptors, no popen.
		{`r.write([:IO, :File, :Socket, :TCPSocket, :ObjectSpace, :Process, :Dir].select { |c| Object.const_defined?(c) }.inspect)`, "[:File, :Dir]"},
		{`r.write([:popen, :for_fd, :sysopen, :foreach, :symlink, :chmod, :delete].select { |m| File.respond_to?(m) }.inspect, File.ancestors.include?(Object))`, "[]true"},
		{`r.write([:system, :exec, :fork, :spawn, :sleep, :exit, :exit!, :open, :require, :load, :syscall].select { |m| respond_to?(m, true) }.inspect)`, "[]"},
		{`r.write(Symbol.respond_to?(:all_symbols).to_s)`, "false"},
	}
	for _, c := range cases {
		body, _, err := run(t, e, t.TempDir(), "h.rb", c.src)
		if err != nil || body != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.src, body, err, c.want)
		}
	}
	// Kernel#` is core mruby's stub without mruby-io: it raises.
	for _, src := range []string{"`id`", "%x(id)", `IO.for_fd(0)`} {
		_, _, err := run(t, e, t.TempDir(), "h.rb", src)
		if err == nil {
			t.Errorf("%s: no error", src)
		}
	}
}

// TestPrintLogs checks that puts/print/p log at info, like Lua's print.
func TestPrintLogs(t *testing.T) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	p := writeHook(t, t.TempDir(), "h.rb", "puts \"hello\", 1\nprint :sym\nx = p({\"a\" => 1})\nr.write(x.inspect)")
	req := scriptingtest.NewRequest(scriptingtest.RequestOptions{})
	if _, err := e.Run(context.Background(), scripting.PhaseContent, p, req); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"level=INFO msg=\"hello 1\"", "msg=sym", `msg="{\"a\"=>1}"`} {
		if !strings.Contains(req.LogText(), want) {
			t.Errorf("log %q does not contain %q", req.LogText(), want)
		}
	}
	if req.Response() != `{"a"=>1}` {
		t.Errorf("p returned %q", req.Response())
	}
}

func TestReturnValue(t *testing.T) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	cases := []struct {
		src    string
		status int
		err    string
	}{
		{"return 403", 403, ""},
		{"return 403 if true\nx = 1", 403, ""},
		{"return 403 if false\nx = 1", 0, ""},
		{"x = 500", 0, ""}, // the last expression's value is not a status
		{"404", 0, ""},
		{"return", 0, ""},
		{"return nil", 0, ""},
		{"return 42", 0, "not an HTTP status"},
		{"return :yes", 0, "not an HTTP status"},
		{"def f; return 1; end\nf", 0, ""},
		{"[1].each { |x| r.exit(418) }", 418, ""},
	}
	for _, c := range cases {
		_, res, err := run(t, e, t.TempDir(), "h.rb", c.src)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: got %v, want an error with %q", c.src, err, c.err)
			}
			continue
		}
		if err != nil || res.Status != c.status {
			t.Errorf("%q: got %d, %v; want %d", c.src, res.Status, err, c.status)
		}
	}
}

// TestTimeout stops loops the script cannot escape from, and the engine
// keeps working afterwards.
func TestTimeout(t *testing.T) {
	e := newEngine(scripting.Config{Limits: scripting.Limits{Timeout: 50 * time.Millisecond}, MaxVMs: 1})
	defer e.Close()
	dir := t.TempDir()
	for _, src := range []string{
		"loop {}",
		"while true; end",
		"begin\n  loop {}\nrescue Exception\n  retry\nend",
		"loop do\n  begin\n    loop {}\n  ensure\n    loop {}\n  end\nend",
		"f = Fiber.new { loop { Fiber.yield } }\nloop { f.resume }",
		"def f; f; end\nloop { begin; f; rescue SystemStackError; end }",
		"loop { [1, 2, 3].each { |x| x * 2 } }",
		"catch(:x) { loop { begin; throw :x; ensure; loop {}; end } }",
	} {
		start := time.Now()
		_, _, err := run(t, e, dir, "loop.rb", src)
		took := time.Since(start)
		if !errors.Is(err, scripting.ErrTimeout) {
			t.Errorf("%q: got %v, want ErrTimeout", src, err)
		}
		if took > 500*time.Millisecond {
			t.Errorf("%q: stopped after %v", src, took)
		}
		body, _, err := run(t, e, dir, "ok.rb", `r.write("alive")`)
		if err != nil || body != "alive" {
			t.Fatalf("after %q: %q, %v", src, body, err)
		}
	}
}

func TestTimeoutFromContext(t *testing.T) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	p := writeHook(t, t.TempDir(), "loop.rb", "loop {}")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e.Run(ctx, scripting.PhaseContent, p, scriptingtest.NewRequest(scriptingtest.RequestOptions{}))
	if !errors.Is(err, scripting.ErrTimeout) || time.Since(start) > 300*time.Millisecond {
		t.Fatalf("got %v after %v", err, time.Since(start))
	}
}

// TestHostileErrorValues: describing a failed run must not call the
// hook's own methods (they would run without the time limit).
func TestHostileErrorValues(t *testing.T) {
	e := newEngine(scripting.Config{Limits: scripting.Limits{Timeout: 100 * time.Millisecond}})
	defer e.Close()
	cases := []struct{ src, want string }{
		{"class E < StandardError\n  def to_s; loop {}; end\n  def message; loop {}; end\n  def inspect; loop {}; end\nend\nraise E, \"evil\"", "evil (E)"},
		{"class S < String\n  def inspect; loop {}; end\n  def to_s; loop {}; end\nend\nreturn S.new(\"x\")", "a value of class S"},
	}
	for _, c := range cases {
		done := make(chan error, 1)
		go func() {
			_, _, err := run(t, e, t.TempDir(), "h.rb", c.src)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("describing the error of %q hangs", c.src)
		}
	}
}

func TestMemoryLimit(t *testing.T) {
	e := newEngine(scripting.Config{Limits: scripting.Limits{MaxMemory: 16 << 20}, MaxVMs: 1})
	defer e.Close()
	dir := t.TempDir()
	for _, src := range []string{
		`a = []; loop { a << ("x" * 1_000_000) }`,
		"a = []\nloop do\n  begin\n    a << (\"x\" * 100_000)\n  rescue Exception\n  end\nend",
		`h = {}; i = 0; loop { h[i] = [i] * 100; i += 1 }`,
		`s = "x"; loop { s += s }`,
	} {
		_, _, err := run(t, e, dir, "mem.rb", src)
		if !errors.Is(err, scripting.ErrMemory) {
			t.Errorf("%q: got %v, want ErrMemory", src, err)
		}
		body, _, err := run(t, e, dir, "ok.rb", `r.write("alive")`)
		if err != nil || body != "alive" {
			t.Fatalf("after %q: %q, %v", src, body, err)
		}
	}
}

func TestSyntaxError(t *testing.T) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	p := writeHook(t, t.TempDir(), "bad.rb", "r.write(\"a\")\n\nx = )\n")
	for _, err := range []error{e.Check(p), func() error {
		_, err := e.Run(context.Background(), scripting.PhaseContent, p, scriptingtest.NewRequest(scriptingtest.RequestOptions{}))
		return err
	}()} {
		var se *scripting.ScriptError
		if !errors.As(err, &se) || se.Line != 3 || !strings.Contains(err.Error(), "bad.rb:3: syntax error") {
			t.Errorf("got %v (%#v), want a syntax error on line 3", err, se)
		}
	}
	if err := e.Check(example(t, "hello.rb")); err != nil {
		t.Errorf("Check(hello.rb): %v", err)
	}
}

// TestReload recompiles a changed file, keeps the old version when the
// new one is broken (logging it once) and takes the next good one.
func TestReload(t *testing.T) {
	var logBuf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logBuf, mu: &mu}, nil))
	e := newEngine(scripting.Config{Logger: log, MaxVMs: 2})
	defer e.Close()
	dir := t.TempDir()
	p := filepath.Join(dir, "h.rb")
	step := func(src, want string, mtime time.Time) {
		t.Helper()
		if src != "" {
			if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
		req := scriptingtest.NewRequest(scriptingtest.RequestOptions{})
		if _, err := e.Run(context.Background(), scripting.PhaseContent, p, req); err != nil {
			t.Fatal(err)
		}
		if req.Response() != want {
			t.Errorf("body %q, want %q", req.Response(), want)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	step(`r.write("v1")`, "v1", t0)
	step("", "v1", t0)
	step(`r.write("v2")`, "v2", t0.Add(time.Second))
	step("r.write(\"v3\"\n", "v2", t0.Add(2*time.Second)) // broken: v2 stays
	step("", "v2", t0)
	mu.Lock()
	n := strings.Count(logBuf.String(), "h.rb:2: syntax error")
	mu.Unlock()
	if n != 1 {
		t.Errorf("the broken version was logged %d times, want once with file:line: %q", n, logBuf.String())
	}
	step(`r.write("v4")`, "v4", t0.Add(3*time.Second))
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestConcurrentRuns runs hooks from many goroutines on one engine.
func TestConcurrentRuns(t *testing.T) {
	e := newEngine(scripting.Config{MaxVMs: 3})
	defer e.Close()
	dir := t.TempDir()
	p := writeHook(t, dir, "c.rb", `$n = r.vars["i"]; s = ""; 50.times { |i| s << i.to_s }; r.write($n.to_s, ":", Hostd.shared.incr("n").to_s.size > 0 ? "ok" : "")`)
	const workers, runs = 8, 200
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range runs {
				id := int64(w*runs + i)
				req := scriptingtest.NewRequest(scriptingtest.RequestOptions{Vars: map[string]any{"i": id}})
				if _, err := e.Run(context.Background(), scripting.PhaseContent, p, req); err != nil {
					errs <- err
					return
				}
				if want := fmt.Sprintf("%d:ok", id); req.Response() != want {
					errs <- fmt.Errorf("body %q, want %q", req.Response(), want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := e.cfg.Shared.Get("n"); got != float64(workers*runs) {
		t.Errorf("counter %v, want %d", got, workers*runs)
	}
}

// TestDefinesMatchBuild checks that the #cgo CFLAGS defines are those
// libmruby was built with (build/mruby/cflags, written by make libmruby).
func TestDefinesMatchBuild(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "build", "mruby", "cflags"))
	if err != nil {
		t.Fatalf("read build/mruby/cflags (run make libmruby): %v", err)
	}
	if got := strings.TrimSpace(string(b)); got != cgoDefines {
		t.Fatalf("libmruby was built with %q, the cgo side uses %q", got, cgoDefines)
	}
	src, err := os.ReadFile("engine.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "-I${SRCDIR}/../../build/mruby/include "+cgoDefines+" ") {
		t.Fatalf("the #cgo CFLAGS line does not carry cgoDefines %q", cgoDefines)
	}
}

func TestClosedEngine(t *testing.T) {
	e := newEngine(scripting.Config{})
	p := writeHook(t, t.TempDir(), "h.rb", `r.write("x")`)
	e.Close()
	if _, err := e.Run(context.Background(), scripting.PhaseContent, p, scriptingtest.NewRequest(scriptingtest.RequestOptions{})); err == nil {
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
