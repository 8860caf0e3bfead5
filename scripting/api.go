package scripting

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"time"
)

// Phase is the request phase a hook runs in. Phases run in the order
// rewrite, access, content, log, as in nginx and Apache.
type Phase uint8

// The hook phases, in the order they run.
const (
	PhaseRewrite Phase = iota
	PhaseAccess
	PhaseContent
	PhaseLog
)

var phaseNames = [...]string{"rewrite", "access", "content", "log"}

// String returns the phase's configuration name.
func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// ParsePhase returns the phase named s ("rewrite", "access", "content" or
// "log").
func ParsePhase(s string) (Phase, error) {
	for i, n := range phaseNames {
		if n == s {
			return Phase(i), nil
		}
	}
	return 0, fmt.Errorf("unknown phase %q (want rewrite, access, content or log)", s)
}

// Request is the request a hook sees; host implements it. An engine calls
// its methods only from the goroutine that runs the hook, so an
// implementation need not be safe for concurrent use.
type Request interface {
	Method() string
	// URI is the request URI as received: escaped path and query.
	URI() string
	// Path is the current, decoded request path (after internal rewrites).
	Path() string
	// SetPath rewrites the path internally (rewrite phase); with
	// hasQuery (r:set_path's argument had a '?'), query replaces the
	// current query. scripting.Hook has split the argument and checked that
	// the path starts with '/' and holds no NUL.
	SetPath(path, query string, hasQuery bool) error
	// Query is the raw query string, without '?'.
	Query() string
	Host() string
	Scheme() string
	// RemoteAddr is the client's IP address, without port.
	RemoteAddr() string
	// RemotePort is the client's TCP port (0: unknown).
	RemotePort() int
	// HeadersIn are the request headers; engines must not modify them.
	HeadersIn() http.Header
	// HeadersOut are the response headers, writable until the first Write.
	HeadersOut() http.Header
	// Body reads the whole request body, up to the vhost's limit; it
	// returns ErrBodyTooLarge past it. Later calls return the same bytes.
	Body() ([]byte, error)
	// Status is the response status set so far (0: none yet).
	Status() int
	SetStatus(code int)
	// Write appends to the response body. The first Write sends the
	// headers with Status (200 when unset). It fails with
	// ErrResponseTooLarge past the vhost's limit.
	Write(p []byte) (int, error)
	// Vars is the table the phases of one request share. Values are
	// JSON-able: nil, bool, float64, int64, string, []any, map[string]any.
	Vars() map[string]any
	// Logger is the tenant's error log with request attributes.
	Logger() *slog.Logger
	// Session returns the request's session (r.session), made on first
	// use; it does no I/O itself (the session loads lazily).
	Session() (Session, error)
}

// Result is what a hook run decided.
type Result struct {
	// Status is the status the hook ended the request with: a returned
	// integer, r:exit(status) or r:redirect. Zero means the hook returned
	// nothing and processing continues with the next hook or phase.
	Status int
}

// Done reports whether the hook ended the request.
func (r Result) Done() bool { return r.Status != 0 }

// Engine runs hook scripts of one language for one tenant. Run may be
// called concurrently; each call uses a VM of its own for the run, from
// the tenant's pool or from a pool shared by many tenants: a run executes
// the tenant's compiled script in a fresh environment with the tenant's
// limits, file gate and shared dictionary, and leaves nothing of the
// tenant in the VM. Run executes on the caller's goroutine (in the thread
// modes one host has locked to a thread carrying the tenant's identity)
// and never starts goroutines.
type Engine interface {
	// Run runs the script file path (absolute) in phase for req. The
	// script is compiled once and recompiled when the file changes; a
	// broken new version keeps the old one and is logged. ctx bounds the
	// run together with Limits.Timeout.
	Run(ctx context.Context, phase Phase, path string, req Request) (Result, error)
	// Check compiles path and reports a syntax error (as *ScriptError)
	// without running it, for hostd check.
	Check(path string) error
	// Close frees the tenant's VMs. Run must not be called after Close.
	Close() error
}

// FS is how an engine reaches files for a tenant; host passes the
// tenant's *sandbox.FS, which confines names to the tenant's directories
// and has the kernel check each operation against the tenant's identity.
// Implementations must be safe for concurrent use.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (*os.File, error)
	Stat(name string) (fs.FileInfo, error)
	Remove(name string) error
	Rename(oldname, newname string) error
}

// ErrNoFS is the error of every file operation of an engine whose Config
// has no FS.
var ErrNoFS = errors.New("scripting: no file access configured")

// noFS is the FS of a Config without one: it refuses everything.
type noFS struct{}

func (noFS) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: ErrNoFS}
}
func (noFS) Stat(name string) (fs.FileInfo, error) {
	return nil, &fs.PathError{Op: "stat", Path: name, Err: ErrNoFS}
}
func (noFS) Remove(name string) error { return &fs.PathError{Op: "remove", Path: name, Err: ErrNoFS} }
func (noFS) Rename(oldname, newname string) error {
	return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: ErrNoFS}
}

// Limits bound one hook run. The zero value uses the defaults.
type Limits struct {
	// Timeout is the wall-clock limit of one run (default 1s).
	Timeout time.Duration
	// MaxMemory is the VM memory limit in bytes, where the engine can
	// enforce one (default 64 MiB).
	MaxMemory int64
	// MaxInput bounds the input size of host functions that do work
	// proportional to it (JSON, hashing, pattern matching), in bytes
	// (default 1 MiB).
	MaxInput int
	// MaxScript is the largest hook or module file, in bytes (default
	// 1 MiB, at most MaxScriptSize); the parser also bounds its nesting.
	MaxScript int
	// MaxFormPart bounds one part of a multipart/form-data body that
	// r:post_args parses, in bytes (0: no limit but the body's).
	MaxFormPart int
}

// Config is what an engine needs to serve one tenant. The zero value works
// except for Logger (nil: discard).
type Config struct {
	Limits Limits
	// HookDir confines require/load of modules (the vhost's hook
	// directory). Empty: require is not available.
	HookDir string
	// FS is the tenant's file gate: hook and module sources are read, and
	// the Lua io and os functions work, only through it. nil: no file
	// access at all (every hook fails to load).
	FS FS
	// Shared is the tenant's shared dictionary (hostd.shared); nil: a
	// private one is made.
	Shared *SharedDict
	Logger *slog.Logger
	// MaxVMs bounds the idle VMs kept per engine (default 8).
	MaxVMs int
	// Scripts keeps the compiled hooks beyond the engine's life (see
	// ScriptStore); nil: the engine keeps its own.
	Scripts *ScriptStore
	// HTTP makes the hooks' outbound requests (hostd.http.request); nil:
	// every outbound request fails with ErrNoOutbound.
	HTTP HTTPClient
}

// Errors a run may return.
var (
	// ErrTimeout means the run exceeded Limits.Timeout and was stopped.
	ErrTimeout = errors.New("scripting: hook exceeded its time limit")
	// ErrMemory means the run exceeded Limits.MaxMemory.
	ErrMemory = errors.New("scripting: hook exceeded its memory limit")
	// ErrBodyTooLarge is returned by Request.Body past the body limit.
	ErrBodyTooLarge = errors.New("scripting: request body too large")
	// ErrResponseTooLarge is returned by Request.Write past the response limit.
	ErrResponseTooLarge = errors.New("scripting: response too large")
	// ErrNotSupported is returned by an engine that is not built in
	// (e.g. mruby under the nomruby build tag).
	ErrNotSupported = errors.New("scripting: engine not built in")
)

// ScriptError is a compile or run-time error in a script, with its location.
type ScriptError struct {
	File string // script path
	Line int    // 0 when unknown
	Msg  string
	Err  error // underlying error (ErrTimeout, ErrMemory ...), may be nil
}

func (e *ScriptError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

func (e *ScriptError) Unwrap() error { return e.Err }
