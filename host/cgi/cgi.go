package cgi

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hostd/hostd/sandbox"
)

// Defaults for Config, and of the keys that set it (tenant takes them
// from here: [limits] cgi_timeout and max_body, [cgi] extensions,
// server.min_uid).
const (
	DefaultExtension = ".cgi"
	DefaultTimeout   = 30 * time.Second
	DefaultMaxBody   = 1 << 20 // 1 MiB
	DefaultMinUID    = 1000
	// DefaultPath is the PATH every script sees.
	DefaultPath = "/usr/local/bin:/usr/bin:/bin"
	// MaxRedirects bounds chained local redirects of one request.
	MaxRedirects = 10
)

// Errors returned by Handler.Resolve (possibly wrapped).
var (
	// ErrNotFound means no file exists along the path.
	ErrNotFound = errors.New("cgi: no such script")
	// ErrNotScript means the path names a file or directory that is not a
	// CGI script (wrong extension, not a regular file, or a directory).
	ErrNotScript = errors.New("cgi: not a cgi script")
	// ErrForbidden means the path is not acceptable: a "." or ".." segment,
	// a NUL byte, or a script whose real path is outside the root.
	ErrForbidden = errors.New("cgi: path not allowed")
)

// Config configures a Handler. A Handler serves one virtual host; the zero
// value of every field but Root and Spawner is usable.
type Config struct {
	// Root is the vhost's document root, an absolute path. Scripts must
	// resolve (symlinks followed) to a real path inside Root's real path.
	Root string
	// Extensions are run directly and must be executable, e.g. ".cgi",
	// ".pl" (default [".cgi"] when Interpreters is empty too). Matching is
	// case-sensitive.
	Extensions []string
	// Interpreters maps an extension to the absolute path of the program
	// that runs it, e.g. ".php" -> "/usr/bin/php-cgi". The program gets no
	// arguments and finds the script in SCRIPT_FILENAME.
	Interpreters map[string]string
	// Timeout limits one script run, from start to the end of its output;
	// at the limit the whole process group is killed (default 30s).
	Timeout time.Duration
	// MaxBody is the largest request body passed on stdin (default 1 MiB);
	// larger bodies get 413.
	MaxBody int64
	// Spawner starts the scripts. Required.
	Spawner *sandbox.Spawner
	// FS is the vhost's file gate, whose first root is Root: script
	// lookups and the suEXEC checks go through it. Required.
	FS *sandbox.FS
	// Identity is the tenant's identity; nil runs scripts with the server's
	// identity (sandbox mode "none").
	Identity *sandbox.Identity
	// SuEXEC enables the suEXEC checks: the script is a regular file owned
	// by Identity.UID and not group- or world-writable, its directory is
	// owned by the tenant or root and not group- or world-writable, and
	// Identity is not root and not below MinUID. It must be true exactly
	// when Identity is set (mode suexec and every switching mode).
	SuEXEC bool
	// MinUID is the lowest uid scripts may run as under SuEXEC (default
	// 1000).
	MinUID uint32
	// Logger receives the handler's own events (refusals, timeouts, bad
	// script output), with the script's URL path; nil discards them.
	Logger *slog.Logger
	// ErrorLog is the vhost's error log: every line a script writes to
	// stderr is written there as "SCRIPT_FILENAME: line\n" in one Write
	// call (it must be safe for concurrent use), both parts escaped with
	// host/logtext so that neither can start another line. nil sends the
	// lines to Logger at level Warn instead.
	ErrorLog io.Writer
	// LocalRedirect re-dispatches a local redirect (a "Location: /path"
	// response without Status) as a new GET request. nil sends the client a
	// 302 to that path instead.
	LocalRedirect http.Handler
	// ServerName is SERVER_NAME; empty means the request's Host without
	// port.
	ServerName string
	// PassAuthorization passes the Authorization header as
	// HTTP_AUTHORIZATION (like Apache's CGIPassAuth); off by default.
	PassAuthorization bool
	// Limits are the resource limits of every script run and the grace
	// its orphans get after it (sandbox.Limits; zero: none).
	Limits sandbox.Limits
}

// Handler runs the CGI scripts of one virtual host. It is immutable after
// New and safe for concurrent use.
type Handler struct {
	root       string // cleaned absolute root
	exts       []string
	interps    map[string]string
	timeout    time.Duration
	maxBody    int64
	spawner    *sandbox.Spawner
	fs         *sandbox.FS
	id         *sandbox.Identity
	suexec     bool
	minUID     uint32
	logger     *slog.Logger
	errorLog   io.Writer
	redirect   http.Handler
	serverName string
	passAuth   bool
	limits     sandbox.Limits
	bufPool    sync.Pool // *[]byte of bufSize, for streaming bodies
}

const (
	bufSize        = 32 << 10
	maxHeaderBytes = 64 << 10
	maxHeaderLines = 200
	maxStderrLine  = 4 << 10
	maxStderrBytes = 1 << 20 // per script run
	waitDelay      = 2 * time.Second
)

// New validates cfg and returns a Handler. Errors name the offending field.
func New(cfg Config) (*Handler, error) {
	if cfg.Spawner == nil {
		return nil, errors.New("cgi: config: Spawner is required")
	}
	if cfg.FS == nil {
		return nil, errors.New("cgi: config: FS is required")
	}
	if cfg.Root == "" || !filepath.IsAbs(cfg.Root) {
		return nil, fmt.Errorf("cgi: config: Root %q must be an absolute path", cfg.Root)
	}
	if cfg.SuEXEC != (cfg.Identity != nil) {
		return nil, errors.New("cgi: config: SuEXEC must be set exactly when Identity is (suexec checks apply to every identity-switching mode)")
	}
	exts := slices.Clone(cfg.Extensions)
	if len(exts) == 0 && len(cfg.Interpreters) == 0 {
		exts = []string{DefaultExtension}
	}
	for _, e := range exts {
		if err := checkExt(e); err != nil {
			return nil, fmt.Errorf("cgi: config: Extensions: %w", err)
		}
	}
	interps := maps.Clone(cfg.Interpreters)
	for e, p := range interps {
		if err := checkExt(e); err != nil {
			return nil, fmt.Errorf("cgi: config: Interpreters: %w", err)
		}
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("cgi: config: Interpreters[%q] = %q: want an absolute path", e, p)
		}
		if slices.Contains(exts, e) {
			return nil, fmt.Errorf("cgi: config: extension %q is in both Extensions and Interpreters", e)
		}
	}
	h := &Handler{
		root:       filepath.Clean(cfg.Root),
		exts:       exts,
		interps:    interps,
		timeout:    cfg.Timeout,
		maxBody:    cfg.MaxBody,
		spawner:    cfg.Spawner,
		fs:         cfg.FS,
		suexec:     cfg.SuEXEC,
		minUID:     cfg.MinUID,
		logger:     cfg.Logger,
		errorLog:   cfg.ErrorLog,
		redirect:   cfg.LocalRedirect,
		serverName: cfg.ServerName,
		passAuth:   cfg.PassAuthorization,
		limits:     cfg.Limits,
	}
	if cfg.Identity != nil {
		id := *cfg.Identity
		id.Groups = slices.Clone(id.Groups)
		h.id = &id
	}
	if h.timeout <= 0 {
		h.timeout = DefaultTimeout
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBody
	}
	if h.minUID == 0 {
		h.minUID = DefaultMinUID
	}
	if h.logger == nil {
		h.logger = slog.New(slog.DiscardHandler)
	}
	h.bufPool.New = func() any { b := make([]byte, bufSize); return &b }
	return h, nil
}

func checkExt(e string) error {
	if len(e) < 2 || e[0] != '.' || strings.ContainsAny(e[1:], "./\x00") {
		return fmt.Errorf("extension %q: want a dot and a name, e.g. \".cgi\"", e)
	}
	return nil
}

// Script is a resolved CGI script.
type Script struct {
	// Name is SCRIPT_NAME: the URL path of the script, e.g. "/cgi/app.cgi".
	Name string
	// Filename is SCRIPT_FILENAME: the script's real absolute path.
	Filename string
	// PathInfo is PATH_INFO: the URL path after Name, e.g. "/extra/path",
	// or "".
	PathInfo string
	// Interpreter is the program that runs the script, or "" when the
	// script is executed directly.
	Interpreter string
}
