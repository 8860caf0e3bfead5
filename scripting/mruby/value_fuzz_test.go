//go:build cgo && !nomruby

package mruby

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/hostd/hostd/scripting/scriptingtest"
)

// FuzzValueCodec decodes arbitrary bytes as the argument list C sends Go
// (value.go). Decoding never panics and allocates no more than the input
// can describe; what it accepts encodes again (appendValue) to bytes that
// decode to the same values, classes of other types becoming nil.
func FuzzValueCodec(f *testing.F) {
	u32 := func(n uint32) []byte { return binary.LittleEndian.AppendUint32(nil, n) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	for _, seed := range [][]byte{
		appendValue(nil, []any{}),
		appendValue(nil, []any{nil, true, false, int64(-7), 2.5, "héllo", []any{"a", int64(1)}, map[string]any{"k": "v", "n": nil}}),
		appendValue(nil, []any{math.NaN(), math.Inf(-1), ""}),
		cat([]byte("a"), u32(2), []byte("x"), u32(4), []byte("Proc"), []byte("n")),
		cat([]byte("a"), u32(1), []byte("h"), u32(2), []byte("i"), make([]byte, 8), []byte("t"), []byte("d"), make([]byte, 8), []byte("f")),
		cat([]byte("a"), u32(0xffffffff)),
		cat([]byte("a"), u32(1), []byte("s"), u32(0xfffffff0)),
		[]byte("n"),
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		args, err := decodeArgs(b)
		if err != nil {
			return
		}
		enc := appendValue(nil, args)
		again, err := decodeArgs(enc)
		if err != nil {
			t.Fatalf("re-encoded %x does not decode: %v", enc, err)
		}
		if !sameValue(withoutUnsupported(args), again) {
			t.Fatalf("round trip: %#v became %#v", args, again)
		}
	})
}

// withoutUnsupported replaces the values of other classes by nil, as
// appendValue encodes them.
func withoutUnsupported(v any) any {
	return scriptingtest.MapValues(v, func(v any) any {
		if _, ok := v.(unsupported); ok {
			return nil
		}
		return v
	})
}

// sameValue is reflect.DeepEqual with floats compared by their bits
// (a NaN is the same NaN again).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			if f, ok := y[k]; !ok || !sameValue(e, f) {
				return false
			}
		}
		return true
	}
	return a == b
}
