package scripting

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// countingFS is the host's file system with its Stat calls counted.
type countingFS struct{ stats atomic.Int64 }

func (f *countingFS) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (f *countingFS) Stat(name string) (fs.FileInfo, error) {
	f.stats.Add(1)
	return os.Stat(name)
}
func (f *countingFS) Remove(name string) error             { return os.Remove(name) }
func (f *countingFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// TestScriptCacheCheckInterval: without an interval every Load stats the
// file and a change is seen at once; with one, a checked version is
// trusted (no stat) until the interval passed, then the change is seen.
func TestScriptCacheCheckInterval(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "hook.lua")
	mtime := time.Now().Add(-time.Hour)
	write := func(src string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		mtime = mtime.Add(time.Second)
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	fsys := new(countingFS)
	store := new(ScriptStore)
	c := CacheFor[string](store, "test")
	log := slog.New(slog.DiscardHandler)
	load := func() string {
		t.Helper()
		v, err := c.Load(fsys, p, log, "test", func() (string, error) {
			b, err := os.ReadFile(p)
			return string(b), err
		})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	write("v1")
	if v := load(); v != "v1" {
		t.Fatalf("first load: %q", v)
	}
	write("v2")
	if v := load(); v != "v2" {
		t.Fatalf("interval 0: %q after a change, want v2", v)
	}
	if n := fsys.stats.Load(); n != 2 {
		t.Fatalf("interval 0: %d stats for 2 loads", n)
	}

	store.SetCheckInterval(time.Hour)
	load() // checks once (v2, unchanged) and starts the interval
	before := fsys.stats.Load()
	write("v3")
	for range 5 {
		if v := load(); v != "v2" {
			t.Fatalf("within the interval: %q, want the checked v2", v)
		}
	}
	if n := fsys.stats.Load() - before; n != 0 {
		t.Fatalf("within the interval: %d stats, want 0", n)
	}

	store.SetCheckInterval(50 * time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	if v := load(); v != "v3" {
		t.Fatalf("after the interval: %q, want v3", v)
	}
	if n := fsys.stats.Load() - before; n != 1 {
		t.Fatalf("after the interval: %d stats, want 1", n)
	}
	// A cache of its own (no store) always checks.
	own := CacheFor[string](nil, "test")
	for range 2 {
		if _, err := own.Load(fsys, p, log, "test", func() (string, error) { return "x", nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n := fsys.stats.Load() - before; n != 3 {
		t.Fatalf("own cache: %d stats in all, want 3", n)
	}
}
