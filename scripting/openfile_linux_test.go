package scripting

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenFile: what no hook may open, in any sandbox mode.
func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "other"), 0o755)
	os.WriteFile(filepath.Join(dir, "other/semi.txt"), []byte("semi"), 0o644)
	os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("ok"), 0o644)
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/proc/self/comm", filepath.Join(dir, "comm"))
	os.Symlink("/dev/null", filepath.Join(dir, "null"))
	// A directory the process holds open, reached through /proc/self/fd:
	// the route to another tenant's files past its permissions.
	held, err := os.Open(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	magic := "/proc/self/fd/" + strconv.Itoa(int(held.Fd())) + "/semi.txt"
	os.Symlink(magic, filepath.Join(dir, "magic"))

	if f, err := OpenFile(filepath.Join(dir, "ok.txt"), os.O_RDONLY); err != nil {
		t.Errorf("regular file: %v", err)
	} else {
		f.Close()
	}
	if f, err := OpenFile(filepath.Join(dir, "new.txt"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC); err != nil {
		t.Errorf("create: %v", err)
	} else {
		f.Close()
	}
	for _, p := range []string{
		filepath.Join(dir, "fifo"), // must not block
		"/proc/self/status", "/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/comm", "/sys/kernel/hostname",
		"/dev/null", filepath.Join(dir, "comm"), filepath.Join(dir, "null"), filepath.Join(dir, "other"),
		magic, filepath.Join(dir, "magic"), "/proc/../proc/self/environ",
	} {
		for _, flags := range []int{os.O_RDONLY, os.O_WRONLY} {
			f, err := OpenFile(p, flags)
			if err == nil {
				f.Close()
				t.Errorf("OpenFile(%s, %#x) succeeded", p, flags)
			}
		}
	}
	if _, err := OpenFile("/proc/self/status", os.O_RDONLY); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("/proc: %v, want a permission error", err)
	}
	if err := Remove(magic); err == nil {
		t.Error("Remove through /proc/self/fd succeeded")
	}
	if err := Rename(filepath.Join(dir, "ok.txt"), magic); err == nil {
		t.Error("Rename into /proc/self/fd succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "other/semi.txt")); err != nil {
		t.Errorf("semi.txt: %v", err)
	}
	if err := Rename(filepath.Join(dir, "ok.txt"), filepath.Join(dir, "ok2.txt")); err != nil {
		t.Errorf("Rename: %v", err)
	}
	if err := Remove(filepath.Join(dir, "ok2.txt")); err != nil {
		t.Errorf("Remove: %v", err)
	}
	if err := Remove(filepath.Join(dir, "other/semi.txt")); err != nil {
		t.Errorf("Remove: %v", err)
	}
	if err := Remove(filepath.Join(dir, "other")); err != nil {
		t.Errorf("Remove of an empty directory: %v", err)
	}
}
