// Package sandboxtest helps hostd's tests: test directories that lie where
// sandbox's rules (sandbox.LogPolicy) accept a log file, and the one way a
// test skips for want of root, a program or a kernel feature - a skip that
// CI (HOSTD_REQUIRE_ROOT=1) turns into a failure - and the one way a test
// waits for something to happen (WaitFor).
package sandboxtest

import (
	"os"
	"strconv"
	"strings"
)

// UseSafeTempDir points TMPDIR (and so t.TempDir) at /var/tmp when the
// system's temporary directory is world-writable without the sticky bit, as
// on some CI machines: anyone could rename a test's directory away there, so
// sandbox.LogPolicy rightly refuses log files below it. Call it from
// TestMain, before any test runs.
func UseSafeTempDir() {
	fi, err := os.Stat(os.TempDir())
	if err != nil || fi.Mode().Perm()&0o002 == 0 || fi.Mode()&os.ModeSticky != 0 {
		return
	}
	for _, dir := range []string{"/var/tmp", "/dev/shm"} {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() && (fi.Mode().Perm()&0o002 == 0 || fi.Mode()&os.ModeSticky != 0) {
			os.Setenv("TMPDIR", dir)
			return
		}
	}
}

// RSS returns this process's resident memory in bytes, from
// /proc/self/status (0 when unknown).
func RSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
