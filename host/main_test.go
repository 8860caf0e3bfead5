package host_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// init keeps the main goroutine on the main thread, as hostd's main does,
// so no request ever runs there: the sandbox refuses to switch the main
// thread (inline mode), whose ids /proc/PID/status shows.
func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	sandboxtest.UseSafeTempDir()
	os.Exit(m.Run())
}
