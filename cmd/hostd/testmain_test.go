package main

import (
	"os"
	"testing"

	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// TestMain keeps the tests' log paths where sandbox.LogPolicy accepts them.
func TestMain(m *testing.M) {
	sandboxtest.UseSafeTempDir()
	os.Exit(m.Run())
}
