package cgi

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hostd/hostd/sandbox"
)

// Resolve maps a decoded URL path to a script under the vhost root by walking
// its segments: the first segment that names a regular file with a script
// extension is the script, the rest of the path is PATH_INFO
// ("/cgi/app.cgi/extra/path" -> script "/cgi/app.cgi", PATH_INFO
// "/extra/path"). Paths with "." or ".." segments or NUL bytes are refused
// with ErrForbidden, and so is a path that resolves outside the root (a
// symbolic link out of it): every segment is looked up through the vhost's
// file gate (Config.FS), which resolves beneath the root. Resolve returns
// ErrNotFound when a segment does not exist (or the tenant may not see it)
// and ErrNotScript when the path ends in a directory or passes a file that
// is not a script.
//
// The lookups run with the gate's identity: the tenant's in mode uring and
// on the switched threads of the thread modes. Resolve is safe for
// concurrent use.
func (h *Handler) Resolve(urlPath string) (Script, error) {
	return resolve(h.fs, urlPath, func(ext string) (string, bool) {
		interp, ok := h.interps[ext]
		return interp, ok || slices.Contains(h.exts, ext)
	})
}

// Resolve maps urlPath to a script under the first root of the vhost's
// file gate like Handler.Resolve, for a handler whose scripts are the
// regular files with one of exts (such as the PHP pool's ".php");
// Script.Interpreter is empty. It is safe for concurrent use.
func Resolve(gate *sandbox.FS, urlPath string, exts []string) (Script, error) {
	return resolve(gate, urlPath, func(ext string) (string, bool) {
		return "", slices.Contains(exts, ext)
	})
}

// resolve walks urlPath through gate; isScript says whether a file
// extension is a script's and which interpreter runs it.
func resolve(gate *sandbox.FS, urlPath string, isScript func(ext string) (string, bool)) (Script, error) {
	if !strings.HasPrefix(urlPath, "/") || strings.IndexByte(urlPath, 0) >= 0 {
		return Script{}, fmt.Errorf("%w: malformed path", ErrForbidden)
	}
	for seg := range strings.SplitSeq(urlPath, "/") {
		if seg == "." || seg == ".." {
			return Script{}, fmt.Errorf("%w: dot segment", ErrForbidden)
		}
	}
	// No segment has a script's extension: the walk below could only end
	// in ErrNotScript or a lookup error, after which the request is served
	// as a static file, which looks the path up through the same gate (and
	// refuses an escape with 403 too). Skip its system calls: this is
	// every static file of a vhost with CGI or PHP.
	if !hasScriptSegment(urlPath, isScript) {
		return Script{}, ErrNotScript
	}
	rel := "" // the root-relative path walked so far
	// pos is the index in urlPath of the '/' before the next segment.
	for pos := 0; pos < len(urlPath); {
		end := strings.IndexByte(urlPath[pos+1:], '/')
		if end < 0 {
			end = len(urlPath)
		} else {
			end += pos + 1
		}
		seg := urlPath[pos+1 : end]
		pos = end
		if seg == "" {
			continue
		}
		if rel == "" {
			rel = seg
		} else {
			rel += "/" + seg
		}
		fi, err := gate.Stat(rel)
		if err != nil {
			return Script{}, lookupError(err)
		}
		if fi.IsDir() {
			continue
		}
		if !fi.Mode().IsRegular() {
			return Script{}, ErrNotScript
		}
		ext := filepath.Ext(seg)
		interp, ok := isScript(ext)
		if !ok {
			return Script{}, ErrNotScript
		}
		real, err := gate.RealPath(rel)
		if err != nil {
			return Script{}, lookupError(err)
		}
		return Script{
			Name:        urlPath[:end],
			Filename:    real,
			PathInfo:    urlPath[end:],
			Interpreter: interp,
		}, nil
	}
	return Script{}, ErrNotScript
}

// hasScriptSegment reports whether a segment of urlPath has a script's
// file extension.
func hasScriptSegment(urlPath string, isScript func(ext string) (string, bool)) bool {
	for seg := range strings.SplitSeq(urlPath, "/") {
		if i := strings.LastIndexByte(seg, '.'); i >= 0 {
			if _, ok := isScript(seg[i:]); ok {
				return true
			}
		}
	}
	return false
}

// lookupError maps a gate error to Resolve's errors.
func lookupError(err error) error {
	switch {
	case errors.Is(err, sandbox.ErrEscapes), errors.Is(err, sandbox.ErrOutsideRoots):
		return fmt.Errorf("%w: script resolves outside the root", ErrForbidden)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return ErrNotFound
	}
	// ENOTDIR and the like: a file in the middle of the path.
	return fmt.Errorf("%w: %w", ErrNotFound, err)
}
