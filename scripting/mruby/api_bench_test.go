//go:build cgo && !nomruby

package mruby

import (
	"testing"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

// BenchmarkAPI measures what a regex match and a cookie lookup add to a
// request (compare with base).
func BenchmarkAPI(b *testing.B) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	scriptingtest.RunAPIBenches(b, e, ".rb")
}
