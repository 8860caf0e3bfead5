package sandbox_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// init keeps the main goroutine on the main thread, as hostd's main does:
// during init the runtime still holds the main goroutine on the main thread.
func init() { runtime.LockOSThread() }

// TestMain dispatches helper child processes (see helper_linux_test.go).
func TestMain(m *testing.M) {
	if runtime.GOOS == "linux" && !sandbox.OnMainThread() {
		panic("the main goroutine is not on the main thread")
	}
	if name := os.Getenv(helperEnv); name != "" {
		os.Exit(runHelper(name))
	}
	sandboxtest.UseSafeTempDir()
	os.Exit(m.Run())
}
