package scripting

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// MaxJSONDepth is the deepest nesting of arrays and objects that EncodeJSON
// and DecodeJSON accept.
const MaxJSONDepth = 100

// ErrJSONTooLarge is returned by EncodeJSON and DecodeJSON when the text is
// longer than the limit.
var ErrJSONTooLarge = errors.New("scripting: json text exceeds the input limit")

// EncodeJSON encodes v, a JSON-able value (nil, bool, float64, int64, int,
// string, []any, map[string]any), as compact JSON of at most max bytes
// (max <= 0: DefaultMaxInput). NaN and infinities are errors.
func EncodeJSON(v any, max int) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxInput
	}
	if err := checkJSONValue(v, 0); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&limitWriter{w: &buf, n: max})
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		if errors.Is(err, ErrJSONTooLarge) {
			return nil, ErrJSONTooLarge
		}
		return nil, fmt.Errorf("json encode: %w", err)
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // drop Encode's newline
}

func checkJSONValue(v any, depth int) error {
	if depth > MaxJSONDepth {
		return fmt.Errorf("json encode: nesting deeper than %d", MaxJSONDepth)
	}
	switch x := v.(type) {
	case nil, bool, string, int64, int:
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("json encode: %v is not a JSON number", x)
		}
	case []any:
		for _, e := range x {
			if err := checkJSONValue(e, depth+1); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, e := range x {
			if err := checkJSONValue(e, depth+1); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("json encode: unsupported type %T", v)
	}
	return nil
}

// DecodeJSON decodes one JSON value from b (at most max bytes; max <= 0:
// DefaultMaxInput) into nil, bool, int64 (integral numbers that fit), float64, string,
// []any or map[string]any. Trailing data other than white space is an error.
func DecodeJSON(b []byte, max int) (any, error) {
	if max <= 0 {
		max = DefaultMaxInput
	}
	if len(b) > max {
		return nil, ErrJSONTooLarge
	}
	if err := checkJSONDepth(b); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("json decode: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("json decode: trailing data after the value")
	}
	return convertNumbers(v), nil
}

// checkJSONDepth rejects nesting deeper than MaxJSONDepth before decoding;
// brackets inside strings are skipped.
func checkJSONDepth(b []byte) error {
	depth, inStr, esc := 0, false, false
	for _, c := range b {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			depth++
			if depth > MaxJSONDepth {
				return fmt.Errorf("json decode: nesting deeper than %d", MaxJSONDepth)
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

func convertNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, err := x.Float64()
		if err != nil { // out of range: keep the closest float
			if len(x) > 0 && x[0] == '-' {
				return math.Inf(-1)
			}
			return math.Inf(1)
		}
		return f
	case []any:
		for i, e := range x {
			x[i] = convertNumbers(e)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = convertNumbers(e)
		}
	}
	return v
}

// limitWriter fails with ErrJSONTooLarge once more than n bytes are written.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	// +1: json.Encoder appends a newline that EncodeJSON drops.
	if len(p) > l.n+1 {
		return 0, ErrJSONTooLarge
	}
	l.n -= len(p)
	return l.w.Write(p)
}
