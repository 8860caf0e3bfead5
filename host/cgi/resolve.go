package cgi

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Resolve maps a decoded URL path to a script under the vhost root by walking
// its segments: the first segment that names a regular file with a script
// extension is the script, the rest of the path is PATH_INFO
// ("/cgi/app.cgi/extra/path" -> script "/cgi/app.cgi", PATH_INFO
// "/extra/path"). Paths with "." or ".." segments or NUL bytes are refused
// with ErrForbidden, and so is a script whose real path (symlinks followed)
// is outside the root's real path. Resolve returns ErrNotFound when a segment
// does not exist and ErrNotScript when the path ends in a directory or passes
// a file that is not a script.
//
// Resolve runs with the server's identity; it only stats files. It is safe
// for concurrent use.
func (h *Handler) Resolve(urlPath string) (Script, error) {
	return resolve(h.root, urlPath, func(ext string) (string, bool) {
		interp, ok := h.interps[ext]
		return interp, ok || slices.Contains(h.exts, ext)
	})
}

// Resolve maps urlPath to a script under root like Handler.Resolve, for a
// handler whose scripts are the regular files with one of exts (such as
// the PHP pool's ".php"); Script.Interpreter is empty. It is safe for
// concurrent use.
func Resolve(root, urlPath string, exts []string) (Script, error) {
	return resolve(filepath.Clean(root), urlPath, func(ext string) (string, bool) {
		return "", slices.Contains(exts, ext)
	})
}

// resolve walks urlPath under root; isScript says whether a file extension
// is a script's and which interpreter runs it.
func resolve(root, urlPath string, isScript func(ext string) (string, bool)) (Script, error) {
	if !strings.HasPrefix(urlPath, "/") || strings.IndexByte(urlPath, 0) >= 0 {
		return Script{}, fmt.Errorf("%w: malformed path", ErrForbidden)
	}
	for seg := range strings.SplitSeq(urlPath, "/") {
		if seg == "." || seg == ".." {
			return Script{}, fmt.Errorf("%w: dot segment", ErrForbidden)
		}
	}
	cur := root
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
		cur = filepath.Join(cur, seg)
		fi, err := os.Stat(cur)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return Script{}, ErrNotFound
			}
			// ENOTDIR and the like: a file in the middle of the path.
			return Script{}, fmt.Errorf("%w: %w", ErrNotFound, err)
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
		real, err := confine(root, cur)
		if err != nil {
			return Script{}, err
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

// confine returns the real path of p, which must lie inside the root's real
// path. The root is resolved on every call, so a vhost whose root is a
// symlink that is later changed stays correct.
func confine(root, p string) (string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	if !within(real, realRoot) {
		return "", fmt.Errorf("%w: script resolves outside the root", ErrForbidden)
	}
	return real, nil
}

// within reports whether the clean absolute path p is dir or inside it.
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}
