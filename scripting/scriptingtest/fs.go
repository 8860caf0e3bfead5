package scriptingtest

import (
	"sync"
	"testing"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/scripting"
)

// rootFS is the gate RootFS returns, made once per test binary.
var rootFS = sync.OnceValues(func() (*sandbox.FS, error) { return sandbox.NewDirectFS("/") })

// RootFS returns a file gate over the whole file system with the test
// process's identity, for engine tests whose hooks live in temporary
// directories. Lookups still go through openat2 with RESOLVE_BENEATH and
// RESOLVE_NO_MAGICLINKS. It panics when the gate cannot be made.
func RootFS() scripting.FS {
	f, err := rootFS()
	if err != nil {
		panic("scriptingtest: " + err.Error())
	}
	return f
}

// DirFS returns a file gate over dirs (relative names resolve under the
// first), with the test process's identity, closed when t ends.
func DirFS(t testing.TB, dirs ...string) scripting.FS {
	t.Helper()
	f, err := sandbox.NewDirectFS(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
