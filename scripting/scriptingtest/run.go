package scriptingtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/scripting"
)

// Case is one hook API test. Sources are per language: Lua is the Lua
// source; other engines supply theirs keyed by Name (see Run).
type Case struct {
	// Name is stable: other engines key their sources by it.
	Name  string
	Phase scripting.Phase // default rewrite (the zero Phase); set it
	Lua   string
	// BeforeLua, if set, is a second script run first, on the same
	// engine, with its own fresh request; its result is not checked
	// beyond "no error". Isolation cases use it (script A must not see
	// script B's globals). Other engines key it as Name+"/before".
	BeforeLua string
	// Runs is how often the script runs on the same engine, each time
	// with a fresh request; every run is checked (default 1).
	Runs int
	Req  RequestOptions
	// DataFile, if set, is written to a temporary file whose path the
	// request carries in the header X-Data-File.
	DataFile string
	// Shared pre-populates the tenant's shared dictionary.
	Shared map[string]any
	// Timeout overrides Limits.Timeout.
	Timeout time.Duration
	// MaxFormPart sets Limits.MaxFormPart.
	MaxFormPart int
	// HTTP gives the engine an outbound client and the request the
	// headers X-Base and X-Redis (see StartHTTP).
	HTTP bool
	Want Want
}

// Want is what a Case expects after each run.
type Want struct {
	Status       int    // Result.Status
	Body         string // exact response body (checked when BodyContains is empty)
	BodyContains string
	RespStatus   int               // Request.Status() after the run (0: not checked)
	Headers      map[string]string // response headers; "" means absent
	// HeaderContains lists substrings that each must be in one of the
	// header's values (in any order).
	HeaderContains map[string][]string
	Vars           map[string]any // request vars that must be present with these values
	Path           string         // Request.Path() after the run ("" : not checked)
	Query          *string        // Request.Query() after the run (nil: not checked)
	Log            string         // the log must contain this
	Shared         map[string]any // dictionary entries after the run (nil value: absent)
	// Err, if set, is a substring of the expected error; ErrIs an error it
	// must wrap. When either is set the error must be a
	// *scripting.ScriptError, with a line when ErrLine is set.
	Err     string
	ErrIs   error
	ErrLine int
}

// WriteHook writes src to the file path, making its directory, and returns
// path.
func WriteHook(t testing.TB, path, src string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// BenchmarkRun runs the hook file path on e in the content phase b.N times,
// reusing one fake request, and checks the last response body is want.
func BenchmarkRun(b *testing.B, e scripting.Engine, path, want string) {
	req := NewRequest(RequestOptions{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req.Reset()
		if _, err := e.Run(ctx, scripting.PhaseContent, path, req); err != nil {
			b.Fatal(err)
		}
	}
	if req.Response() != want {
		b.Fatalf("body %q", req.Response())
	}
}

// Run runs every case in Cases: for each, it makes an engine with
// newEngine (whose Config has the case's shared dictionary and a temporary
// HookDir; the engine should honor Limits and Shared), writes the source
// src(c) to a file with extension ext (".lua", ".rb") in HookDir and runs
// it. A case whose src is "" is skipped (not implemented by that engine).
// For a case with BeforeLua, src is also called with a copy of the case
// named Name+"/before" whose Lua is BeforeLua.
func Run(t *testing.T, newEngine func(t *testing.T, cfg scripting.Config) scripting.Engine, ext string, src func(c Case) string) {
	t.Helper()
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			RunCase(t, c, newEngine, ext, src)
		})
	}
}

// RunAcrossTenants runs the cases with a first script (BeforeLua) with
// that script on one tenant's engine and the case's script on another's,
// each with its own configuration (shared dictionary, hook directory, file
// gate). newEngine should make engines sharing one VM (a pool of one), so
// that the second tenant runs on the VM the first one used: what the first
// tenant changed must not be visible to the second.
func RunAcrossTenants(t *testing.T, newEngine func(t *testing.T, cfg scripting.Config) scripting.Engine, ext string, src func(c Case) string) {
	t.Helper()
	for _, c := range Cases() {
		if c.BeforeLua == "" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			bc := c
			bc.Name, bc.Lua, bc.BeforeLua = c.Name+"/before", c.BeforeLua, ""
			carolDir := t.TempDir()
			carol := newEngine(t, scripting.Config{HookDir: carolDir, FS: DirFS(t, carolDir)})
			t.Cleanup(func() { carol.Close() })
			bpath := WriteHook(t, filepath.Join(carolDir, "before"+ext), src(bc))
			if _, err := carol.Run(context.Background(), c.Phase, bpath, NewRequest(c.Req)); err != nil {
				t.Fatalf("carol's script: %v", err)
			}
			c.BeforeLua = ""
			RunCase(t, c, newEngine, ext, src) // dave
		})
	}
}

// RunCase runs one case; see Run.
func RunCase(t *testing.T, c Case, newEngine func(t *testing.T, cfg scripting.Config) scripting.Engine, ext string, src func(c Case) string) {
	t.Helper()
	main := src(c)
	if main == "" {
		t.Skip("no source for this engine")
	}
	dir := t.TempDir()
	dict := scripting.NewSharedDict(0)
	for k, v := range c.Shared {
		if err := dict.Set(k, v, 0); err != nil {
			t.Fatal(err)
		}
	}
	// The gate's roots: the hook directory (where relative names
	// resolve) and the data directory.
	dataDir := t.TempDir()
	cfg := scripting.Config{HookDir: dir, Shared: dict, FS: DirFS(t, dir, dataDir)}
	if c.Timeout > 0 {
		cfg.Limits.Timeout = c.Timeout
	}
	cfg.Limits.MaxFormPart = c.MaxFormPart
	if c.HTTP {
		var hdr map[string]string
		cfg.HTTP, hdr = StartHTTP(t)
		for k, v := range c.Req.Headers {
			hdr[k] = v
		}
		c.Req.Headers = hdr
	}
	eng := newEngine(t, cfg)
	t.Cleanup(func() { eng.Close() })

	if c.DataFile != "" {
		df := WriteHook(t, filepath.Join(dataDir, "data.txt"), c.DataFile)
		h := map[string]string{"X-Data-File": df}
		for k, v := range c.Req.Headers {
			h[k] = v
		}
		c.Req.Headers = h
	}
	ctx := context.Background()
	if c.BeforeLua != "" {
		bc := c
		bc.Name, bc.Lua, bc.BeforeLua = c.Name+"/before", c.BeforeLua, ""
		bsrc := src(bc)
		if bsrc == "" {
			t.Fatalf("no source for %s", bc.Name)
		}
		bpath := WriteHook(t, filepath.Join(dir, "before"+ext), bsrc)
		if _, err := eng.Run(ctx, c.Phase, bpath, NewRequest(c.Req)); err != nil {
			t.Fatalf("before script: %v", err)
		}
	}
	path := WriteHook(t, filepath.Join(dir, "hook"+ext), main)
	runs := max(c.Runs, 1)
	for i := range runs {
		req := NewRequest(c.Req)
		res, err := eng.Run(ctx, c.Phase, path, req)
		check(t, i, c, req, res, err, dict)
	}
}

func check(t *testing.T, run int, c Case, req *Request, res scripting.Result, err error, dict *scripting.SharedDict) {
	t.Helper()
	w := c.Want
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("run %d: "+format, append([]any{run + 1}, args...)...)
	}
	if w.Err != "" || w.ErrIs != nil {
		if err == nil {
			fail("got no error, want one containing %q (is %v); body %q", w.Err, w.ErrIs, req.Response())
			return
		}
		var se *scripting.ScriptError
		if !errors.As(err, &se) {
			fail("error %v (%T) is not a *scripting.ScriptError", err, err)
		}
		if w.Err != "" && !strings.Contains(err.Error(), w.Err) {
			fail("error %q does not contain %q", err, w.Err)
		}
		if w.ErrIs != nil && !errors.Is(err, w.ErrIs) {
			fail("error %v does not wrap %v", err, w.ErrIs)
		}
		if w.ErrLine > 0 && se != nil && se.Line != w.ErrLine {
			fail("error line %d, want %d (%v)", se.Line, w.ErrLine, err)
		}
	} else if err != nil {
		fail("unexpected error: %v", err)
		return
	}
	if res.Status != w.Status {
		fail("Result.Status %d, want %d", res.Status, w.Status)
	}
	if w.BodyContains != "" {
		if !strings.Contains(req.Response(), w.BodyContains) {
			fail("body %q does not contain %q", req.Response(), w.BodyContains)
		}
	} else if req.Response() != w.Body {
		fail("body %q, want %q", req.Response(), w.Body)
	}
	if w.RespStatus != 0 && req.Status() != w.RespStatus {
		fail("response status %d, want %d", req.Status(), w.RespStatus)
	}
	for k, v := range w.Headers {
		if got := strings.Join(req.HeadersOut().Values(k), ", "); got != v {
			fail("header %s = %q, want %q", k, got, v)
		}
	}
	for k, subs := range w.HeaderContains {
		vals := req.HeadersOut().Values(k)
		for _, sub := range subs {
			if !slices.ContainsFunc(vals, func(v string) bool { return strings.Contains(v, sub) }) {
				fail("header %s = %q has no value containing %q", k, vals, sub)
			}
		}
	}
	for k, v := range w.Vars {
		if got, ok := req.Vars()[k]; !ok || !reflect.DeepEqual(normalize(got), normalize(v)) {
			fail("vars[%q] = %#v, want %#v", k, got, v)
		}
	}
	if w.Path != "" && req.Path() != w.Path {
		fail("path %q, want %q", req.Path(), w.Path)
	}
	if w.Query != nil && req.Query() != *w.Query {
		fail("query %q, want %q", req.Query(), *w.Query)
	}
	if w.Log != "" && !strings.Contains(req.LogText(), w.Log) {
		fail("log %q does not contain %q", req.LogText(), w.Log)
	}
	for k, v := range w.Shared {
		if got := dict.Get(k); !reflect.DeepEqual(normalize(got), normalize(v)) {
			fail("shared[%q] = %#v, want %#v", k, got, v)
		}
	}
}

// normalize makes numbers float64 so that engines that keep integers
// (int64) and those that do not compare equal.
func normalize(v any) any {
	return MapValues(v, func(v any) any {
		switch x := v.(type) {
		case int:
			return float64(x)
		case int64:
			return float64(x)
		}
		return v
	})
}

// MapValues returns v, a value of the hook API ([]any and map[string]any
// nested), with leaf applied to every value that is neither, in new lists
// and maps.
func MapValues(v any, leaf func(any) any) any {
	switch x := v.(type) {
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = MapValues(e, leaf)
		}
		return l
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = MapValues(e, leaf)
		}
		return m
	}
	return leaf(v)
}
