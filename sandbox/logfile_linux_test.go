package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/sandbox/sandboxtest"
)

const logTenant = 31041

// TestOpenLogFile tries every way a tenant could make the server open or
// create a file of its choosing: a log directory it owns or can write, a
// symbolic link, a hard link, a FIFO, a file it owns.
func TestOpenLogFile(t *testing.T) {
	sandboxtest.RequireRoot(t)
	policy := LogPolicy{}
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the log path
		ok    bool
	}{
		{"new file in a new root-owned directory", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "logs", "sub", "a.log")
		}, true},
		{"existing root file, group adm-writable directory", func(t *testing.T, dir string) string {
			mkdir(t, dir+"/logs", 0o775, 0, 4)
			os.WriteFile(dir+"/logs/a.log", []byte("old\n"), 0o600)
			return dir + "/logs/a.log"
		}, true},
		{"directory owned by the tenant", func(t *testing.T, dir string) string {
			mkdir(t, dir+"/logs", 0o755, logTenant, logTenant)
			return dir + "/logs/a.log"
		}, false},
		{"directory writable by the tenant's group", func(t *testing.T, dir string) string {
			mkdir(t, dir+"/logs", 0o775, 0, logTenant)
			return dir + "/logs/a.log"
		}, false},
		{"world-writable sticky directory", func(t *testing.T, dir string) string {
			mkdir(t, dir+"/logs", 0o1777, 0, 0)
			return dir + "/logs/a.log"
		}, false},
		{"parent owned by the tenant", func(t *testing.T, dir string) string {
			mkdir(t, dir+"/home", 0o755, logTenant, logTenant)
			mkdir(t, dir+"/home/logs", 0o755, 0, 0)
			return dir + "/home/logs/a.log"
		}, false},
		{"symbolic link to a new file", func(t *testing.T, dir string) string {
			mkdir(t, dir+"/logs", 0o755, 0, 0)
			os.Symlink(dir+"/secret/cron", dir+"/logs/a.log")
			return dir + "/logs/a.log"
		}, false},
		{"hard link", func(t *testing.T, dir string) string {
			mkdir(t, dir+"/logs", 0o755, 0, 0)
			os.WriteFile(dir+"/other", nil, 0o600)
			os.Link(dir+"/other", dir+"/logs/a.log")
			return dir + "/logs/a.log"
		}, false},
		{"FIFO", func(t *testing.T, dir string) string {
			mkdir(t, dir+"/logs", 0o755, 0, 0)
			unix.Mkfifo(dir+"/logs/a.log", 0o600)
			return dir + "/logs/a.log"
		}, false},
		{"file owned by the tenant", func(t *testing.T, dir string) string {
			mkdir(t, dir+"/logs", 0o755, 0, 0)
			os.WriteFile(dir+"/logs/a.log", nil, 0o600)
			os.Chown(dir+"/logs/a.log", logTenant, logTenant)
			return dir + "/logs/a.log"
		}, false},
		{"group-writable file of the tenant's group", func(t *testing.T, dir string) string {
			mkdir(t, dir+"/logs", 0o755, 0, 0)
			os.WriteFile(dir+"/logs/a.log", nil, 0o660)
			os.Chown(dir+"/logs/a.log", 0, logTenant)
			os.Chmod(dir+"/logs/a.log", 0o660)
			return dir + "/logs/a.log"
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mkdir(t, dir+"/secret", 0o700, 0, 0)
			path := tc.setup(t, dir)
			cerr := CheckLogPath(path, policy)
			f, err := OpenLogFile(path, policy, logTenant)
			if !tc.ok {
				if err == nil || !errors.Is(err, ErrLogPath) || f != nil {
					t.Fatalf("OpenLogFile: %v, want an error wrapping ErrLogPath", err)
				}
				if cerr == nil || !errors.Is(cerr, ErrLogPath) {
					t.Errorf("CheckLogPath: %v, want an error wrapping ErrLogPath", cerr)
				}
				if _, err := os.Lstat(dir + "/secret/cron"); err == nil {
					t.Errorf("the symlink's target was created")
				}
				return
			}
			if err != nil || cerr != nil {
				t.Fatalf("OpenLogFile: %v; CheckLogPath: %v", err, cerr)
			}
			defer f.Close()
			if _, err := f.WriteString("line\n"); err != nil {
				t.Fatal(err)
			}
			fi, _ := os.Stat(path)
			st := fi.Sys().(*syscall.Stat_t)
			if st.Uid != 0 || st.Gid != logTenant || fi.Mode().Perm()&0o040 == 0 || fi.Mode().Perm()&0o022 != 0 {
				t.Errorf("%s: owner %d:%d mode %v, want root:%d with group read and no group/other write", path, st.Uid, st.Gid, fi.Mode(), logTenant)
			}
		})
	}
}

func mkdir(t *testing.T, p string, mode os.FileMode, uid, gid int) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}
