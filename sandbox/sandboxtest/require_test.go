package sandboxtest

import (
	"os"
	"testing"
)

// recorder is a TB that records what a helper did instead of stopping.
type recorder struct{ skipped, failed bool }

func (r *recorder) Helper()      {}
func (r *recorder) Skip(...any)  { r.skipped = true }
func (r *recorder) Fatal(...any) { r.failed = true }

func TestSkipfRequireEnv(t *testing.T) {
	t.Setenv(RequireEnv, "")
	os.Unsetenv(RequireEnv)
	var r recorder
	Skipf(&r, "no %s", "thing")
	if !r.skipped || r.failed {
		t.Errorf("without %s: skipped %v failed %v, want a skip", RequireEnv, r.skipped, r.failed)
	}
	t.Setenv(RequireEnv, "1")
	r = recorder{}
	Skipf(&r, "no %s", "thing")
	if r.skipped || !r.failed {
		t.Errorf("with %s: skipped %v failed %v, want a failure", RequireEnv, r.skipped, r.failed)
	}
	r = recorder{}
	LookPath(&r, "hostd-no-such-program", "none")
	if !r.failed {
		t.Error("LookPath of a missing program did not fail under " + RequireEnv)
	}
}
