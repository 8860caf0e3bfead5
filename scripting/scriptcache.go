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

// MaxScriptSize is the largest Limits.MaxScript may be.
const MaxScriptSize = 16 << 20

// ReadScript reads a hook file of at most DefaultMaxScript bytes through
// the tenant's file gate; errors are *ScriptError.
func ReadScript(fsys FS, path string) ([]byte, error) {
	return ReadScriptLimit(fsys, path, DefaultMaxScript)
}

// ReadScriptLimit reads a hook or module file of at most max bytes
// (Limits.MaxScript; DefaultMaxScript when max <= 0, at most
// MaxScriptSize) through the tenant's file gate; errors are *ScriptError.
func ReadScriptLimit(fsys FS, path string, max int) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxScript
	}
	max = min(max, MaxScriptSize)
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, &ScriptError{File: path, Msg: "cannot open hook", Err: err}
	}
	defer f.Close()
	if err := CheckHookFile(f); err != nil {
		return nil, &ScriptError{File: path, Msg: "cannot open hook", Err: err}
	}
	src, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, &ScriptError{File: path, Msg: "cannot read hook", Err: err}
	}
	if len(src) > max {
		return nil, &ScriptError{File: path, Line: 1, Msg: fmt.Sprintf("hook file is larger than %d bytes ([limits] max_script_size)", max)}
	}
	return src, nil
}

// errNotHookFile is why CheckHookFile refused a file; it is a permission
// error.
var errNotHookFile error = &notHookFileError{}

type notHookFileError struct{}

func (*notHookFileError) Error() string        { return "not a regular file a hook may open" }
func (*notHookFileError) Is(target error) bool { return target == os.ErrPermission }

// checkRegular refuses f unless it is a regular file.
func checkRegular(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &os.PathError{Op: "open", Path: f.Name(), Err: errNotHookFile}
	}
	return nil
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
	check  atomic.Int64   // SetCheckInterval's value, nanoseconds
}

// SetCheckInterval sets how long a hook file's version, once checked, is
// trusted without checking it again (server.hook_check_interval): 0, the
// default, stats the file through the gate at every run, so a saved hook
// is live at the next request; d > 0 stats it at most once per d per
// file (as PHP's opcache.revalidate_freq and nginx's
// open_file_cache_valid do), so a change may take up to d to be seen.
// The stat is not an access check: when it fails, the last compiled
// version keeps running either way, so skipping it lets nothing run that
// would not have run. It applies to the store's caches at once.
func (s *ScriptStore) SetCheckInterval(d time.Duration) { s.check.Store(int64(max(d, 0))) }

// CacheFor returns store's cache for lang, made on first use; a nil store
// gives a new cache of the caller's own. Engines of one language must use
// the same T.
func CacheFor[T any](store *ScriptStore, lang string) *ScriptCache[T] {
	if store == nil {
		return &ScriptCache[T]{epoch: time.Now()}
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if c, ok := store.caches[lang].(*ScriptCache[T]); ok {
		return c
	}
	if store.caches == nil {
		store.caches = make(map[string]any)
	}
	c := &ScriptCache[T]{store: store, epoch: time.Now()}
	store.caches[lang] = c
	return c
}

// ScriptCache is a cache of hook files: one compiled form (T) per path
// and the file version (modification time and size) it was made from. It
// is safe for concurrent use.
type ScriptCache[T any] struct {
	mu    sync.RWMutex
	m     map[string]*cachedScript[T]
	seq   atomic.Uint64
	store *ScriptStore // its check interval; nil: check at every Load
	epoch time.Time    // the origin of cachedScript.checked (monotonic)
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
	// checked is when the file was last stat'ed and found to be this
	// version (or the bad one), as time since the cache's epoch.
	checked atomic.Int64
}

// since returns the monotonic time since c's epoch, in nanoseconds.
func (c *ScriptCache[T]) since() int64 { return int64(time.Since(c.epoch)) }

// Load returns the cached form of the hook file path, which it stats
// through the tenant's file gate fsys (at most once per the store's check
// interval, SetCheckInterval, when that is set). When the file changed since (or was
// never loaded), compile makes it anew; when that fails, or the file cannot
// be read any more, and an older form is cached, the error is logged once
// per file version (as "<lang> hook has an error; still using the previous
// version") and the older form is returned. Without an older form the
// error wraps ErrNeverCompiled.
func (c *ScriptCache[T]) Load(fsys FS, path string, log *slog.Logger, lang string, compile func() (T, error)) (T, error) {
	var zero T
	var mt time.Time
	var size int64
	var now int64
	if c.store != nil {
		if iv := c.store.check.Load(); iv > 0 {
			now = c.since()
			c.mu.RLock()
			s := c.m[path]
			fresh := s != nil && now-s.checked.Load() < iv
			var val T
			if fresh {
				val = s.val
			}
			c.mu.RUnlock()
			if fresh {
				return val, nil
			}
		}
	}
	fi, statErr := fsys.Stat(path)
	if statErr != nil {
		mt, size = time.Time{}, -1 // a version of its own: "missing"
	} else {
		mt, size = fi.ModTime(), fi.Size()
	}
	if now == 0 {
		now = c.since()
	}
	c.mu.RLock()
	s := c.m[path]
	var cur struct {
		val        T
		modTime    time.Time
		size       int64
		badModTime time.Time
		badSize    int64
	}
	if s != nil {
		cur.val, cur.modTime, cur.size, cur.badModTime, cur.badSize = s.val, s.modTime, s.size, s.badModTime, s.badSize
	}
	c.mu.RUnlock()
	if s != nil && (statErr == nil && cur.modTime.Equal(mt) && cur.size == size ||
		cur.badModTime.Equal(mt) && cur.badSize == size) {
		s.checked.Store(now)
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
			s2.checked.Store(now)
		}
		c.mu.Unlock()
		return cur.val, nil
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]*cachedScript[T])
	}
	ns := &cachedScript[T]{val: val, modTime: mt, size: size}
	ns.checked.Store(now)
	c.m[path] = ns
	c.mu.Unlock()
	return val, nil
}
