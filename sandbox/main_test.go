package sandbox_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/hostd/hostd/sandbox"
	// The main thread stays locked, as in hostd (sandbox/bootstrap).
	_ "github.com/hostd/hostd/sandbox/bootstrap"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

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
