package scripting

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
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

// ErrNeverCompiled wraps the error of a hook file that has no compiled
// version to fall back on: it did not compile (or could not be read) the
// first time it was needed. host answers 503 for it.
var ErrNeverCompiled = errors.New("scripting: hook has no working version")

// ScriptStore holds one tenant's script caches, one per language, apart
// from its engines: host hands a vhost's engines the same store across
// reloads, so that a hook whose new version does not compile keeps its
// last good compiled form even in engines built after the vhost changed.
// It is safe for concurrent use.
type ScriptStore struct {
	mu     sync.Mutex
	caches map[string]any // language -> *ScriptCache[T]
}

// CacheFor returns store's cache for lang, made on first use; a nil store
// gives a new cache of the caller's own. Engines of one language must use
// the same T.
func CacheFor[T any](store *ScriptStore, lang string) *ScriptCache[T] {
	if store == nil {
		return new(ScriptCache[T])
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if c, ok := store.caches[lang].(*ScriptCache[T]); ok {
		return c
	}
	if store.caches == nil {
		store.caches = make(map[string]any)
	}
	c := new(ScriptCache[T])
	store.caches[lang] = c
	return c
}

// ScriptCache is a cache of hook files: one compiled form (T) per path
// and the file version (modification time and size) it was made from. It
// is safe for concurrent use.
type ScriptCache[T any] struct {
	mu  sync.RWMutex
	m   map[string]*cachedScript[T]
	seq atomic.Uint64
}

// NextVersion returns a number no other call on c returned, for engines
// that tag what they compiled from the cache (several engines may share
// c).
func (c *ScriptCache[T]) NextVersion() uint64 { return c.seq.Add(1) }

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
// fails, or the file cannot be read any more, and an older form is
// cached, the error is logged once per file version (as "<lang> hook has
// an error; still using the previous version") and the older form is
// returned. Without an older form the error wraps ErrNeverCompiled.
func (c *ScriptCache[T]) Load(path string, log *slog.Logger, lang string, compile func() (T, error)) (T, error) {
	var zero T
	mt, size, statErr := statFile(path)
	if statErr != nil {
		mt, size = time.Time{}, -1 // a version of its own: "missing"
	}
	c.mu.RLock()
	s := c.m[path]
	var cur cachedScript[T]
	if s != nil {
		cur = *s
	}
	c.mu.RUnlock()
	if s != nil && (statErr == nil && cur.modTime.Equal(mt) && cur.size == size ||
		cur.badModTime.Equal(mt) && cur.badSize == size) {
		return cur.val, nil
	}
	var val T
	err := error(&ScriptError{File: path, Msg: "cannot open hook", Err: statErr})
	if statErr == nil {
		val, err = compile()
	}
	if err != nil {
		if s == nil {
			return zero, fmt.Errorf("%w: %w", ErrNeverCompiled, err)
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
