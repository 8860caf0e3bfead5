package host

import (
	"io/fs"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The open-file cache of static files ([limits] open_file_cache_valid and
// open_file_cache_max), nginx's open_file_cache made safe for tenants that
// share a server:
//
//   - A vhost's cache is its own (a field of the vhost, built from one
//     immutable tenant.VHost): a descriptor one vhost's gate opened is never
//     looked up by another, and the tenant's uid, gid and sandbox mode are
//     fixed for the cache's life, since changing them in a reload builds a
//     new vhost. Keys are the cleaned names below the document root
//     (rootRelative), so "a/../b" and "b" are one entry.
//   - An entry is made only from a descriptor the gate opened for this vhost
//     (the kernel checked it as the tenant, the gate kept it beneath the
//     root) and only for a regular file. Failures (404, 403) are never
//     cached: the next request asks the gate again. Directories are not
//     kept either: a request for one opens it through the gate, and its
//     index file may then be a hit.
//   - Every hit fstat(2)s the kept descriptor (~0.3 us, no path lookup) and
//     drops the entry, opening the file through the gate again, when the
//     inode changed in any way: size, mtime or ctime (a write, a truncation,
//     chmod, chown, an ACL, a new or removed hard link, a rename or unlink,
//     which all move ctime), or no link left. A chmod 000 of the file, or
//     its replacement by another file or a symbolic link, is therefore seen
//     at the next request; the headers and the body always come from the
//     same fstat as without the cache.
//   - What the cache does not see is a change around the file: a parent
//     directory made unreadable, renamed or replaced (by a symbolic link,
//     say) while the file's own inode stays untouched. For up to
//     open_file_cache_valid after the open, the kept descriptor, which
//     still names the file the gate opened, serves that file's content
//     (never another file's: a descriptor cannot be redirected). Then the
//     entry expires and the gate decides again.
//   - Bounds: open_file_cache_max entries per vhost (least recently used
//     closed first) and a server-wide budget of descriptors (fdBudget, a
//     quarter of RLIMIT_NOFILE) that no tenant can exhaust for the others:
//     a vhost over it closes its own least recently used entry, or serves
//     uncached. Entries expire valid after their open and are closed by a
//     timer even when no request comes. A reload drops every vhost's
//     entries; a vhost that closes closes them.
//
// A request holds a reference to the entry it serves, so an entry evicted
// while its body is being sent keeps its descriptor until that request
// is done (a descriptor number is never reused under a reader).

// openFiles is a vhost's open-file cache. The zero value (valid 0) is off.
// It is safe for concurrent use.
type openFiles struct {
	valid  time.Duration
	max    int       // entries; <= 0: only the server's budget
	budget *fdBudget // the server's

	hits, misses atomic.Uint64

	mu     sync.Mutex
	m      map[string]*openFile
	lru    openFile // sentinel: lru.next is the most recently used
	timer  *time.Timer
	closed bool
}

// openFile is one kept descriptor of a regular file.
type openFile struct {
	name    string
	fd      int
	fi      fs.FileInfo // from the gate's fstat at open
	st      *syscall.Stat_t
	expires time.Time
	// refs counts the cache's reference (while in the map) and the
	// requests serving the file; the last one closes fd.
	refs       atomic.Int64
	prev, next *openFile
}

// fdBudget bounds the descriptors all vhosts' caches keep. It is safe for
// concurrent use.
type fdBudget struct {
	limit int64
	used  atomic.Int64
}

// newFDBudget returns the server's budget: a quarter of the process's
// descriptor limit (Go raises the soft limit to the hard one at start),
// at least 64.
func newFDBudget() *fdBudget {
	var rl syscall.Rlimit
	limit := int64(1024)
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur < 1<<40 {
		limit = int64(rl.Cur)
	}
	return &fdBudget{limit: max(64, limit/4)}
}

func (b *fdBudget) take() bool {
	if b.used.Add(1) > b.limit {
		b.used.Add(-1)
		return false
	}
	return true
}

func (b *fdBudget) give() { b.used.Add(-1) }

func newOpenFiles(valid time.Duration, maxEntries int, budget *fdBudget) *openFiles {
	c := &openFiles{valid: valid, max: maxEntries, budget: budget}
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// on reports whether the cache is enabled.
func (c *openFiles) on() bool { return c != nil && c.valid > 0 }

// get returns the live entry of name with a reference the caller releases,
// or nil (a miss): no entry, an expired one, or one whose file changed
// since it was opened (the entry is dropped).
func (c *openFiles) get(name string) *openFile {
	now := time.Now()
	c.mu.Lock()
	e := c.m[name]
	if e == nil {
		c.mu.Unlock()
		c.misses.Add(1)
		return nil
	}
	if !now.Before(e.expires) {
		c.evictLocked(e)
		c.mu.Unlock()
		c.misses.Add(1)
		return nil
	}
	e.refs.Add(1)
	c.unlinkLocked(e)
	c.pushLocked(e)
	c.mu.Unlock()
	var st syscall.Stat_t
	if err := syscall.Fstat(e.fd, &st); err != nil || !sameFile(&st, e.st) {
		c.drop(e)
		e.release()
		c.misses.Add(1)
		return nil
	}
	c.hits.Add(1)
	return e
}

// sameFile reports whether the kept descriptor's file is as it was when
// opened: same inode, size, mtime and ctime, and still linked.
func sameFile(now, then *syscall.Stat_t) bool {
	return now.Nlink > 0 && now.Dev == then.Dev && now.Ino == then.Ino && now.Size == then.Size &&
		now.Mtim == then.Mtim && now.Ctim == then.Ctim && now.Mode == then.Mode
}

// add makes an entry of fd, a regular file the gate just opened for name,
// and returns it with a reference the caller releases; the entry owns fd
// from then on. It returns nil, leaving fd to the caller, when the cache
// is closed or the server's budget is spent by other vhosts.
func (c *openFiles) add(name string, fd int, fi fs.FileInfo) *openFile {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return nil
	}
	e := &openFile{name: name, fd: fd, fi: fi, st: st, expires: time.Now().Add(c.valid)}
	e.refs.Store(2) // the cache's and the caller's
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if c.m == nil {
		c.m = make(map[string]*openFile)
	}
	if old := c.m[name]; old != nil {
		c.evictLocked(old) // a concurrent miss of the same name
	}
	if c.max > 0 && len(c.m) >= c.max {
		c.evictLocked(c.lru.prev)
	}
	if !c.budget.take() {
		if len(c.m) == 0 {
			return nil
		}
		c.evictLocked(c.lru.prev)
		if !c.budget.take() {
			return nil
		}
	}
	c.m[name] = e
	c.pushLocked(e)
	if c.timer == nil {
		c.timer = time.AfterFunc(c.valid, c.sweep)
	}
	return e
}

// drop removes e from the cache if it is still the entry of its name.
func (c *openFiles) drop(e *openFile) {
	c.mu.Lock()
	if c.m[e.name] == e {
		c.evictLocked(e)
	}
	c.mu.Unlock()
}

// sweep closes the expired entries and runs again when the next one
// expires, but at most twice per validity (each run looks at every entry;
// an expired entry is never served meanwhile, get checks); it stops when
// the cache is empty (add starts it again).
func (c *openFiles) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timer = nil
	if c.closed {
		return
	}
	now := time.Now()
	var next time.Time
	for _, e := range c.m {
		switch {
		case !now.Before(e.expires):
			c.evictLocked(e)
		case next.IsZero() || e.expires.Before(next):
			next = e.expires
		}
	}
	if !next.IsZero() {
		c.timer = time.AfterFunc(max(next.Sub(now), c.valid/2, 10*time.Millisecond), c.sweep)
	}
}

// flush closes every entry (a reload); the cache stays usable.
func (c *openFiles) flush() {
	if c == nil {
		return
	}
	c.mu.Lock()
	for _, e := range c.m {
		c.evictLocked(e)
	}
	c.mu.Unlock()
}

// close closes every entry and makes the cache refuse new ones (the vhost
// closes).
func (c *openFiles) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	for _, e := range c.m {
		c.evictLocked(e)
	}
	c.mu.Unlock()
}

// entries returns the number of kept descriptors.
func (c *openFiles) entries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// evictLocked removes e from the map and the list, returns its budget and
// drops the cache's reference.
func (c *openFiles) evictLocked(e *openFile) {
	delete(c.m, e.name)
	c.unlinkLocked(e)
	c.budget.give()
	e.release()
}

func (c *openFiles) unlinkLocked(e *openFile) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (c *openFiles) pushLocked(e *openFile) {
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

// release drops a reference; the last one closes the descriptor.
func (e *openFile) release() {
	if e.refs.Add(-1) == 0 {
		syscall.Close(e.fd)
	}
}

// openFilesCollector exports the open-file caches to Prometheus at scrape
// time: hits and misses of each vhost whose cache is on, and the server's
// descriptor budget.
type openFilesCollector struct{ s *Server }

var (
	openFilesHitsDesc    = prometheus.NewDesc("hostd_open_file_cache_hits_total", "Static requests served from a descriptor the vhost's open-file cache kept (open_file_cache_valid).", []string{"vhost"}, nil)
	openFilesMissesDesc  = prometheus.NewDesc("hostd_open_file_cache_misses_total", "Static opens through the gate with the vhost's open-file cache on (no entry, expired or changed).", []string{"vhost"}, nil)
	openFilesEntriesDesc = prometheus.NewDesc("hostd_open_file_cache_entries", "Descriptors the vhost's open-file cache keeps.", []string{"vhost"}, nil)
	openFilesFDsDesc     = prometheus.NewDesc("hostd_open_file_cache_fds", "Descriptors all open-file caches keep.", nil, nil)
	openFilesBudgetDesc  = prometheus.NewDesc("hostd_open_file_cache_fds_budget", "The most descriptors the open-file caches may keep (a quarter of RLIMIT_NOFILE).", nil, nil)
)

func (openFilesCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{openFilesHitsDesc, openFilesMissesDesc, openFilesEntriesDesc, openFilesFDsDesc, openFilesBudgetDesc} {
		ch <- d
	}
}

func (c openFilesCollector) Collect(ch chan<- prometheus.Metric) {
	for _, v := range c.s.routes.Load().all {
		if of := v.openFiles; of != nil {
			name := v.cfg.ServerName
			ch <- prometheus.MustNewConstMetric(openFilesHitsDesc, prometheus.CounterValue, float64(of.hits.Load()), name)
			ch <- prometheus.MustNewConstMetric(openFilesMissesDesc, prometheus.CounterValue, float64(of.misses.Load()), name)
			ch <- prometheus.MustNewConstMetric(openFilesEntriesDesc, prometheus.GaugeValue, float64(of.entries()), name)
		}
	}
	b := c.s.openFDs
	ch <- prometheus.MustNewConstMetric(openFilesFDsDesc, prometheus.GaugeValue, float64(b.used.Load()))
	ch <- prometheus.MustNewConstMetric(openFilesBudgetDesc, prometheus.GaugeValue, float64(b.limit))
}
