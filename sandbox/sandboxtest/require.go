package sandboxtest

import (
	"fmt"
	"os"
	"os/exec"
	"time"
)

// RequireEnv names the environment variable that turns every skip of
// Skipf, RequireRoot and LookPath into a failure: CI sets it
// (HOSTD_REQUIRE_ROOT=1 in .ci/run), where a test that cannot run is a
// test that did not pass.
const RequireEnv = "HOSTD_REQUIRE_ROOT"

// TB is the part of testing.TB the helpers use.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
}

// Skipf skips the test for want of a prerequisite (root, a program, a
// kernel feature), or fails it when RequireEnv is set.
func Skipf(t TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) != "" {
		t.Fatal(msg + " (" + RequireEnv + " is set: this test must run here)")
		return
	}
	t.Skip(msg)
}

// RequireRoot skips the test (see Skipf) unless it runs as root.
func RequireRoot(t TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skipf(t, "needs root (CI runs as root)")
	}
}

// LookPath returns the path of program name, or skips the test (see
// Skipf) naming the Debian package that has it.
func LookPath(t TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Skipf(t, "%s not installed (Debian package %s; make deps installs it)", name, pkg)
	}
	return p
}

// WaitTimeout is how long WaitFor polls: generous, for loaded CI machines.
const WaitTimeout = 15 * time.Second

// WaitFor polls cond every few milliseconds until it holds, and fails the
// test naming what it waited for when WaitTimeout passes first. Tests wait
// with it for something to happen instead of sleeping a guessed time.
func WaitFor(t TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 20*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out after " + WaitTimeout.String() + " waiting for " + what)
			return
		}
		time.Sleep(pause)
	}
}
