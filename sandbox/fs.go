package sandbox

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// FS is a tenant's file gate: every file operation hostd performs on a
// tenant's behalf (static files, the Lua io and os functions, hook and
// module reads, CGI script checks) goes through one. It confines paths to a
// fixed list of root directories and has the kernel check each operation
// against the tenant's identity:
//
//   - Names are resolved with openat2(2) relative to a root's descriptor
//     with RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS: neither "..", nor an
//     absolute or escaping symbolic link, nor a /proc magic link
//     (/proc/self/fd/N, /proc/thread-self/...) can leave the root.
//     Symbolic links that stay inside the root are followed; mount points
//     below a root are not crossed (RESOLVE_NO_XDEV: a FUSE mount a tenant
//     made cannot hang the gate; give mounted content a root of its own).
//     A root's own path is opened as the operator configured it, following
//     only symbolic links root or the server owns. Unlink,
//     rename and mkdir open the parent directory that way and act on a
//     single name inside it.
//   - A relative name is resolved under the first root; an absolute path
//     must lie lexically under one of the roots (after filepath.Clean), or
//     the operation fails with an error wrapping ErrOutsideRoots.
//   - Opens refuse FIFOs, sockets and devices: the file is opened with
//     O_NONBLOCK (a FIFO cannot block the server) and checked with fstat.
//   - In ModeUring every operation is submitted to an io_uring ring with
//     the tenant's registered personality, so the kernel checks it with
//     the tenant's uid, gid and groups and without capabilities, whatever
//     thread submits it. In the other modes it is a plain syscall on the
//     calling thread: with the server's identity in ModeNone and
//     ModeSuexec, with the tenant's on the switched threads of ModeThread,
//     ModeThreadPerRequest and ModeInline (call it from inside Tenant.Run).
//
// Descriptors the gate returns were permission-checked when opened; reading,
// writing, fstat and getdents on them need no further check. An FS is safe
// for concurrent use. Close releases the root descriptors.
type FS struct {
	roots []*fsRoot
	b     backend
	dirs  *Dirs    // where shared roots come from; nil: roots of its own
	st    *fsState // shared with the Root views
	view  bool     // a Root view: Close does nothing
}

// fsState is a gate's open/closed state: operations hold mu for reading
// while they use the roots' descriptors, Close for writing, so no
// descriptor is closed (and its number reused for another directory) while
// an operation resolves beneath it.
type fsState struct {
	mu     sync.RWMutex
	closed bool
}

// enter starts an operation on f; leave must follow unless it fails.
func (f *FS) enter() error {
	f.st.mu.RLock()
	if f.st.closed {
		f.st.mu.RUnlock()
		return ErrFSClosed
	}
	return nil
}

func (f *FS) leave() { f.st.mu.RUnlock() }

// fsRoot is one allowed directory.
type fsRoot struct {
	path string // as configured, cleaned and absolute
	real string // path with symlinks resolved ("" when equal to path)
	fd   int    // O_PATH|O_DIRECTORY descriptor

	// Guarded by the Dirs' lock when shared.
	refs   int  // gates using it
	shared bool // in a Dirs' map
}

// gateError is an error of the gate itself; it counts as a permission
// error (errors.Is(err, fs.ErrPermission)).
type gateError struct{ msg string }

func (e *gateError) Error() string        { return e.msg }
func (e *gateError) Is(target error) bool { return target == fs.ErrPermission }

// Errors of the gate, wrapped in *fs.PathError. All of them match
// fs.ErrPermission with errors.Is.
var (
	// ErrOutsideRoots is returned for an absolute path that is not under
	// any of the gate's roots, or a relative one that starts with "..".
	ErrOutsideRoots error = &gateError{"path is outside the tenant's allowed directories"}
	// ErrEscapes is returned when resolving a name would leave its root
	// (through "..", a symbolic link or a /proc magic link).
	ErrEscapes error = &gateError{"path escapes the tenant's directory"}
	// ErrNotRegular is returned by opens of FIFOs, sockets and devices.
	ErrNotRegular error = &gateError{"not a regular file or directory"}
	// ErrFSClosed is returned by operations after the gate, or its
	// tenant's personality (ModeUring), was closed.
	ErrFSClosed error = &gateError{"the tenant's file gate is closed"}
	// ErrUntrustedLink is returned when a root's path leads through a
	// symbolic link that neither root nor the server owns (a tenant's
	// link could point the root anywhere).
	ErrUntrustedLink error = &gateError{"a root's path leads through a symbolic link the server does not trust"}
)

// Roots returns the gate's root directories, the first one being where
// relative names resolve.
func (f *FS) Roots() []string {
	r := make([]string, len(f.roots))
	for i, root := range f.roots {
		r[i] = root.path
	}
	return r
}

// Root returns a view of f restricted to its i-th root, sharing f's
// descriptors and identity; the view's Close does nothing, and it must not
// be used after f is closed.
func (f *FS) Root(i int) *FS {
	return &FS{roots: f.roots[i : i+1], b: f.b, dirs: f.dirs, st: f.st, view: true}
}

// resolve maps name to a root and a name relative to it.
func (f *FS) resolve(name string) (*fsRoot, string, error) {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return nil, "", fs.ErrInvalid
	}
	if !filepath.IsAbs(name) {
		if name == ".." || strings.HasPrefix(name, "../") {
			return nil, "", ErrOutsideRoots
		}
		return f.roots[0], name, nil
	}
	p := filepath.Clean(name)
	var best *fsRoot
	rel := ""
	for _, r := range f.roots {
		for _, base := range []string{r.path, r.real} {
			if base == "" {
				continue
			}
			var ok bool
			var rest string
			switch {
			case base == "/":
				ok, rest = true, strings.TrimPrefix(p, "/")
			case p == base:
				ok, rest = true, ""
			case strings.HasPrefix(p, base) && p[len(base)] == '/':
				ok, rest = true, p[len(base)+1:]
			}
			// The longest (most specific) root wins.
			if ok && (best == nil || len(rest) < len(rel)) {
				best, rel = r, rest
			}
		}
	}
	if best == nil {
		return nil, "", ErrOutsideRoots
	}
	if rel == "" {
		rel = "."
	}
	return best, rel, nil
}

// splitParent splits a root-relative name into its parent directory
// (relative, "" for the root itself) and its last element, which must be
// a real name (not "", "." or "..").
func splitParent(rel string) (dir, base string, ok bool) {
	rel = strings.TrimRight(rel, "/")
	i := strings.LastIndexByte(rel, '/')
	dir, base = "", rel
	if i >= 0 {
		dir, base = rel[:i], rel[i+1:]
	}
	if base == "" || base == "." || base == ".." {
		return "", "", false
	}
	return dir, base, true
}

// cleanRoots checks and dedupes root paths, keeping their order.
func cleanRoots(roots []string) ([]string, error) {
	if len(roots) == 0 {
		return nil, &fs.PathError{Op: "open root", Path: "", Err: fs.ErrInvalid}
	}
	var out []string
	for _, r := range roots {
		if !filepath.IsAbs(r) {
			return nil, &fs.PathError{Op: "open root", Path: r, Err: &gateError{"root must be an absolute path"}}
		}
		r = filepath.Clean(r)
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// dirEntry is an fs.DirEntry whose Info goes through the gate.
type dirEntry struct {
	fs.DirEntry
	gate *FS
	path string
}

func (d *dirEntry) Info() (fs.FileInfo, error) { return d.gate.Lstat(d.path) }
