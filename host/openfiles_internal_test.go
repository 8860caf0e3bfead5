package host

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox"
)

// openForCache opens dir/name read-only as the gate would and returns the
// descriptor and its information.
func openForCache(t *testing.T, dir, name string) (int, os.FileInfo) {
	t.Helper()
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fd, fi
}

// open reports whether fd is still open on dir/name.
func openOn(fd int, dir, name string) bool {
	target, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	return err == nil && target == filepath.Join(dir, name)
}

// TestOpenFilesBudget: the server's descriptor budget is shared, but a
// vhost over it only ever closes its own entries: another vhost's stay.
func TestOpenFilesBudget(t *testing.T) {
	dir := t.TempDir()
	budget := &fdBudget{limit: 4}
	a := newOpenFiles(time.Hour, 0, budget)
	b := newOpenFiles(time.Hour, 0, budget)
	defer a.close()
	defer b.close()
	for i := range 4 {
		fd, fi := openForCache(t, dir, fmt.Sprintf("a%d", i))
		e := a.add(fi.Name(), fd, fi)
		if e == nil {
			t.Fatalf("a%d not cached", i)
		}
		e.release()
	}
	// b finds the budget spent and has nothing of its own to close.
	fd, fi := openForCache(t, dir, "b0")
	if e := b.add("b0", fd, fi); e != nil {
		t.Fatal("b cached a file with the budget spent by a")
	}
	syscall.Close(fd)
	if a.entries() != 4 || budget.used.Load() != 4 {
		t.Fatalf("a has %d entries, budget used %d; want 4, 4", a.entries(), budget.used.Load())
	}
	// a over the budget closes its least recently used entry (a1 after a
	// hit on a0).
	if e := a.get("a0"); e == nil {
		t.Fatal("a0 missing")
	} else {
		e.release()
	}
	fd, fi = openForCache(t, dir, "a4")
	e := a.add("a4", fd, fi)
	if e == nil {
		t.Fatal("a4 not cached")
	}
	e.release()
	if a.get("a1") != nil {
		t.Fatal("a1 kept: the least recently used entry should have been closed")
	}
	if e := a.get("a0"); e == nil {
		t.Fatal("a0 closed instead of a1")
	} else {
		e.release()
	}
	if budget.used.Load() != 4 {
		t.Fatalf("budget used %d, want 4", budget.used.Load())
	}
	a.flush()
	if budget.used.Load() != 0 || a.entries() != 0 {
		t.Fatalf("after flush: budget used %d, %d entries", budget.used.Load(), a.entries())
	}
}

// TestOpenFilesHeldEntry: an entry evicted while a request holds it keeps
// its descriptor until that request releases it; an expired entry is a
// miss and is closed by the sweep without any request.
func TestOpenFilesHeldEntry(t *testing.T) {
	dir := t.TempDir()
	c := newOpenFiles(50*time.Millisecond, 10, &fdBudget{limit: 100})
	defer c.close()
	fd, fi := openForCache(t, dir, "f")
	e := c.add("f", fd, fi)
	if e == nil {
		t.Fatal("not cached")
	}
	c.flush()
	if !openOn(e.fd, dir, "f") {
		t.Fatal("descriptor closed under a request holding it")
	}
	e.release()
	if openOn(fd, dir, "f") {
		t.Fatal("descriptor still open after the last release")
	}

	fd, fi = openForCache(t, dir, "g")
	e = c.add("g", fd, fi)
	e.release()
	deadline := time.Now().Add(10 * time.Second)
	for openOn(fd, dir, "g") {
		if time.Now().After(deadline) {
			t.Fatal("an expired entry was not closed by the sweep")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c.get("g") != nil || c.entries() != 0 {
		t.Fatal("an expired entry was served")
	}
}

// BenchmarkStaticOpen compares what a static request does to get its file:
// the gate's open, fstat and close (mode none's direct gate, and mode
// uring's personality as uid 31001 when root), against a hit of the
// open-file cache (a map lookup and an fstat of the kept descriptor).
func BenchmarkStaticOpen(b *testing.B) {
	dir := b.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "1k.txt"), make([]byte, 1024), 0o644); err != nil {
		b.Fatal(err)
	}
	gates := map[string]*sandbox.FS{}
	direct, err := sandbox.NewDirectFS(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	gates["gate-none"] = direct
	if os.Geteuid() == 0 {
		if rings, err := sandbox.NewRings(0); err == nil {
			defer rings.Close()
			tn, err := sandbox.NewTenant(sandbox.Options{Mode: sandbox.ModeUring,
				Identity: sandbox.Identity{UID: 31001, GID: 31001}, Rings: rings})
			if err != nil {
				b.Fatal(err)
			}
			defer tn.Close()
			g, err := tn.NewFS(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			gates["gate-uring"] = g
		}
	}
	for _, name := range []string{"gate-none", "gate-uring"} {
		g := gates[name]
		if g == nil {
			continue
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				fd, _, err := g.OpenFDStat("1k.txt")
				if err != nil {
					b.Fatal(err)
				}
				syscall.Close(fd)
			}
		})
	}
	b.Run("cache-hit", func(b *testing.B) {
		c := newOpenFiles(time.Hour, 10, &fdBudget{limit: 10})
		defer c.close()
		fd, fi, err := direct.OpenFDStat("1k.txt")
		if err != nil {
			b.Fatal(err)
		}
		c.add("1k.txt", fd, fi).release()
		b.ReportAllocs()
		for b.Loop() {
			e := c.get("1k.txt")
			if e == nil {
				b.Fatal("miss")
			}
			e.release()
		}
	})
}
