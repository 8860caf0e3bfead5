package phpfpm

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

const testUID = 31003

// syncBuffer is an error log safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testPool returns a pool of uid testUID serving a docroot with hello.php.
func testPool(t *testing.T, mod func(*Config)) (*Pool, *syncBuffer) {
	t.Helper()
	sandboxtest.RequireRoot(t)
	const fpm = "/usr/sbin/php-fpm8.2"
	if _, err := os.Stat(fpm); err != nil {
		t.Fatalf("%s: %v (make deps installs php8.2-fpm)", fpm, err)
	}
	dir := t.TempDir()
	for p := dir; p != "/"; p = filepath.Dir(p) { // the tenant must reach its root
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 {
			os.Chmod(p, fi.Mode().Perm()|0o111)
		}
	}
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "hello.php"), []byte(`<?php echo "Hello, world!\n";`), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := sandbox.NewSpawner(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sp.Close)
	errLog := &syncBuffer{}
	gate, err := sandbox.NewDirectFS(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gate.Close() })
	cfg := Config{Name: "t.example", Identity: sandbox.Identity{UID: testUID, GID: testUID}, Root: root, FS: gate, FPM: fpm, ErrorLog: errLog}
	if mod != nil {
		mod(&cfg)
	}
	p, err := NewManager(filepath.Join(dir, "state"), sp).NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, errLog
}

func serve(t *testing.T, p *Pool, path string) *httptest.ResponseRecorder {
	t.Helper()
	s, err := p.Resolve(path)
	if err != nil {
		t.Fatalf("resolve %s: %v", path, err)
	}
	w := httptest.NewRecorder()
	p.ServeScript(w, httptest.NewRequest(http.MethodGet, "https://t.example"+path, nil), s)
	return w
}

func alive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

func TestPoolStopsWhenIdleAndStartsAgain(t *testing.T) {
	p, _ := testPool(t, func(c *Config) { c.PoolIdle = 200 * time.Millisecond })
	if w := serve(t, p, "/hello.php"); w.Code != 200 || w.Body.String() != "Hello, world!\n" {
		t.Fatalf("hello: %d %q", w.Code, w.Body)
	}
	pid := p.Stats().PID
	sandboxtest.WaitFor(t, "the idle pool to stop", func() bool { return p.Stats().State == StateIdle })
	sandboxtest.WaitFor(t, "its processes to go", func() bool { return !alive(pid) })
	if _, err := os.Stat(p.sock); !os.IsNotExist(err) {
		t.Errorf("socket of a stopped pool: %v", err)
	}
	if w := serve(t, p, "/hello.php"); w.Code != 200 {
		t.Fatalf("after the idle stop: %d %q", w.Code, w.Body)
	}
	if st := p.Stats(); st.Starts != 2 || st.Crashes != 0 || st.State != StateRunning {
		t.Fatalf("stats %+v: want 2 starts, no crash, running", st)
	}
	pid = p.Stats().PID
	p.Close()
	if alive(pid) {
		t.Errorf("pool group %d alive after Close", pid)
	}
	if w := serve(t, p, "/hello.php"); w.Code != http.StatusServiceUnavailable {
		t.Errorf("after Close: %d, want 503", w.Code)
	}
}

func TestPoolThatCannotStartBacksOff(t *testing.T) {
	// A php-fpm that exits at once, like one with a broken pool file.
	p, _ := testPool(t, func(c *Config) { c.FPM = "/bin/false"; c.Timeout = 10 * time.Second })
	w := serve(t, p, "/hello.php")
	if w.Code != http.StatusBadGateway && w.Code != http.StatusServiceUnavailable {
		t.Fatalf("first request to a pool that dies at start: %d, want 502 or 503", w.Code)
	}
	st := p.Stats()
	if st.State != StateFailed || st.Starts != maxQuickDeaths {
		t.Fatalf("stats %+v: want failed after %d starts", st, maxQuickDeaths)
	}
	if w := serve(t, p, "/hello.php"); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("during the back-off: %d, want 503", w.Code)
	}
	if p.Stats().Starts != maxQuickDeaths {
		t.Fatalf("a request during the back-off started php-fpm")
	}
}

// TestPoolLogReachesTheErrorLog: php-fpm's own warnings (here: a worker
// killed under it) go to the tenant's error log, prefixed "php-fpm: ".
func TestPoolLogReachesTheErrorLog(t *testing.T) {
	p, errLog := testPool(t, nil)
	if w := serve(t, p, "/hello.php"); w.Code != 200 {
		t.Fatalf("hello: %d %q", w.Code, w.Body)
	}
	master := p.Stats().PID
	var worker int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid == master {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == master {
			worker = pid
		}
	}
	if worker == 0 {
		t.Fatal("no worker in the pool's group")
	}
	if err := syscall.Kill(worker, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	sandboxtest.WaitFor(t, "php-fpm's warning in the error log", func() bool {
		return strings.Contains(errLog.String(), "php-fpm: ") && strings.Contains(errLog.String(), "SIGKILL")
	})
	if w := serve(t, p, "/hello.php"); w.Code != 200 {
		t.Fatalf("after a worker died: %d %q", w.Code, w.Body)
	}
	if st := p.Stats(); st.Crashes != 0 || st.PID != master {
		t.Errorf("a dead worker restarted the master: %+v", st)
	}
}

// TestPoolRefusesALinkedDirectory: state_dir/php-fpm must be the server's
// own directory; a symlink (to somewhere a tenant could reach) is refused
// and nothing is created through it.
func TestPoolRefusesALinkedDirectory(t *testing.T) {
	p, _ := testPool(t, nil)
	elsewhere := t.TempDir()
	if err := os.MkdirAll(filepath.Dir(p.m.dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, p.m.dir); err != nil {
		t.Fatal(err)
	}
	if w := serve(t, p, "/hello.php"); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("pool directory is a symlink: %d, want 503", w.Code)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Fatalf("files created through the symlink: %v", ents)
	}
}
