//go:build cgo && !nomruby

package mruby

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Values cross between C and Go in a small tagged encoding, so that no Go
// pointer is kept by C and no mruby call (which may raise) runs on a Go
// frame:
//
//	'n' nil, 't' true, 'f' false
//	'i' int64 (8 bytes, little endian), 'd' float64 (8 bytes)
//	's' uint32 length + bytes
//	'a' uint32 count + values
//	'h' uint32 count + key, value pairs
//	'x' uint32 length + class name: a value of another class (from C only)
//
// C encodes a method's arguments as one 'a' list; Go answers with one value.

var errBadValue = errors.New("malformed value encoding")

type decoder struct {
	b   []byte
	off int
}

func (d *decoder) need(n int) error {
	if d.off+n > len(d.b) {
		return errBadValue
	}
	return nil
}

func (d *decoder) u32() (int, error) {
	if err := d.need(4); err != nil {
		return 0, err
	}
	n := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return int(n), nil
}

// value decodes one value: nil, bool, int64, float64, string, []any or
// map[string]any (non-string keys are formatted as strings).
func (d *decoder) value(depth int) (any, error) {
	if depth > 200 {
		return nil, errBadValue
	}
	if err := d.need(1); err != nil {
		return nil, err
	}
	tag := d.b[d.off]
	d.off++
	switch tag {
	case 'n':
		return nil, nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case 'i', 'd':
		if err := d.need(8); err != nil {
			return nil, err
		}
		u := binary.LittleEndian.Uint64(d.b[d.off:])
		d.off += 8
		if tag == 'i' {
			return int64(u), nil
		}
		return math.Float64frombits(u), nil
	case 's':
		n, err := d.u32()
		if err != nil {
			return nil, err
		}
		if err := d.need(n); err != nil {
			return nil, err
		}
		s := string(d.b[d.off : d.off+n])
		d.off += n
		return s, nil
	case 'a':
		l, err := d.array(depth)
		if err != nil {
			return nil, err
		}
		return l, nil
	case 'h':
		n, err := d.u32()
		if err != nil {
			return nil, err
		}
		if n > len(d.b)-d.off {
			return nil, errBadValue
		}
		m := make(map[string]any, n)
		for range n {
			k, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			m[keyString(k)] = v
		}
		return m, nil
	case 'x':
		n, err := d.u32()
		if err != nil {
			return nil, err
		}
		if err := d.need(n); err != nil {
			return nil, err
		}
		c := unsupported(d.b[d.off : d.off+n])
		d.off += n
		return c, nil
	}
	return nil, errBadValue
}

// unsupported stands for a Ruby value that has no Go equivalent (a Proc,
// an Object ...); it is the value's class name.
type unsupported string

// findUnsupported returns the class name of the first unsupported value
// in v.
func findUnsupported(v any) (string, bool) {
	switch x := v.(type) {
	case unsupported:
		return string(x), true
	case []any:
		for _, e := range x {
			if c, ok := findUnsupported(e); ok {
				return c, ok
			}
		}
	case map[string]any:
		for _, e := range x {
			if c, ok := findUnsupported(e); ok {
				return c, ok
			}
		}
	}
	return "", false
}

func keyString(k any) string {
	switch x := k.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case nil:
		return ""
	default:
		return fmt.Sprint(x)
	}
}

// decodeArgs decodes the argument list C sends.
func decodeArgs(b []byte) ([]any, error) {
	// The list directly, not through value: boxing it in an any would be
	// an allocation per host call.
	if len(b) == 0 || b[0] != 'a' {
		return nil, errBadValue
	}
	d := decoder{b: b, off: 1}
	l, err := d.array(0)
	if err != nil || d.off != len(b) {
		return nil, errBadValue
	}
	return l, nil
}

// array decodes the elements of an array whose tag was read.
func (d *decoder) array(depth int) ([]any, error) {
	n, err := d.u32()
	if err != nil {
		return nil, err
	}
	if n > len(d.b)-d.off { // each value takes at least one byte
		return nil, errBadValue
	}
	l := make([]any, n)
	for i := range l {
		if l[i], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// appendValue encodes v; unsupported types encode as nil.
func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 'n')
	case bool:
		if x {
			return append(b, 't')
		}
		return append(b, 'f')
	case int:
		return binary.LittleEndian.AppendUint64(append(b, 'i'), uint64(x))
	case int64:
		return binary.LittleEndian.AppendUint64(append(b, 'i'), uint64(x))
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, 'd'), math.Float64bits(x))
	case string:
		b = binary.LittleEndian.AppendUint32(append(b, 's'), uint32(len(x)))
		return append(b, x...)
	case []byte:
		b = binary.LittleEndian.AppendUint32(append(b, 's'), uint32(len(x)))
		return append(b, x...)
	case []string:
		b = binary.LittleEndian.AppendUint32(append(b, 'a'), uint32(len(x)))
		for _, s := range x {
			b = appendValue(b, s)
		}
		return b
	case []any:
		b = binary.LittleEndian.AppendUint32(append(b, 'a'), uint32(len(x)))
		for _, e := range x {
			b = appendValue(b, e)
		}
		return b
	case map[string]any:
		b = binary.LittleEndian.AppendUint32(append(b, 'h'), uint32(len(x)))
		for k, e := range x {
			b = appendValue(appendValue(b, k), e)
		}
		return b
	}
	return append(b, 'n')
}
