package host_test

import (
	"os"
	"testing"

	// The main thread stays locked, as in hostd (sandbox/bootstrap).
	_ "github.com/hostd/hostd/sandbox/bootstrap"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	sandboxtest.UseSafeTempDir()
	os.Exit(m.Run())
}
