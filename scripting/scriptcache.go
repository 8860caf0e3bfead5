package scripting

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// MaxScriptSize bounds a hook or module file.
const MaxScriptSize = 4 << 20

// ReadScript reads a hook file of at most MaxScriptSize bytes, opened with
// OpenFile (a regular file, never a FIFO, a /proc magic link or a kernel
// file); errors are *ScriptError.
func ReadScript(path string) ([]byte, error) {
	f, err := OpenFile(path, os.O_RDONLY)
	if err != nil {
		return nil, &ScriptError{File: path, Msg: "cannot open hook", Err: err}
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxScriptSize+1))
	if err != nil {
		return nil, &ScriptError{File: path, Msg: "cannot read hook", Err: err}
	}
	if len(src) > MaxScriptSize {
		return nil, &ScriptError{File: path, Msg: fmt.Sprintf("hook is larger than %d bytes", MaxScriptSize)}
	}
	return src, nil
}

// ScriptCache is an engine's cache of hook files: one compiled form (T) per
// path and the file version (modification time and size) it was made
// from. It is safe for concurrent use.
type ScriptCache[T any] struct {
	mu sync.RWMutex
	m  map[string]*cachedScript[T]
}

type cachedScript[T any] struct {
	val     T
	modTime time.Time
	size    int64
	// badModTime/badSize identify a broken newer version that was
	// already logged; val stays in use until the file changes.
	badModTime time.Time
	badSize    int64
}

// Load returns the cached form of the hook file path. When the file
// changed since (or was never loaded), compile makes it anew; when that
// fails and an older form is cached, the error is logged once per file
// version (as "<lang> hook has an error; still using the previous
// version") and the older form is returned. A missing file is a
// *ScriptError.
func (c *ScriptCache[T]) Load(path string, log *slog.Logger, lang string, compile func() (T, error)) (T, error) {
	var zero T
	mt, size, err := statFile(path)
	if err != nil {
		return zero, &ScriptError{File: path, Msg: "cannot open hook", Err: err}
	}
	c.mu.RLock()
	s := c.m[path]
	var cur cachedScript[T]
	if s != nil {
		cur = *s
	}
	c.mu.RUnlock()
	if s != nil && (cur.modTime.Equal(mt) && cur.size == size ||
		cur.badModTime.Equal(mt) && cur.badSize == size) {
		return cur.val, nil
	}
	val, err := compile()
	if err != nil {
		if s == nil {
			return zero, err
		}
		log.Error(lang+" hook has an error; still using the previous version", "err", err.Error())
		c.mu.Lock()
		if s2 := c.m[path]; s2 != nil {
			s2.badModTime, s2.badSize = mt, size
		}
		c.mu.Unlock()
		return cur.val, nil
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]*cachedScript[T])
	}
	c.m[path] = &cachedScript[T]{val: val, modTime: mt, size: size}
	c.mu.Unlock()
	return val, nil
}
