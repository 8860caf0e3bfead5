package scripting

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestJSONRoundTrip(t *testing.T) {
	for _, c := range []struct {
		in   string
		want any
	}{
		{`null`, nil},
		{`true`, true},
		{`42`, int64(42)},
		{`-1.5`, -1.5},
		{`1e400`, math.Inf(1)},
		{`12345678901234567890`, 1.2345678901234567e19},
		{`"a\u00e9"`, "aé"},
		{` [1, "x", {"k": [false]}] `, []any{int64(1), "x", map[string]any{"k": []any{false}}}},
	} {
		got, err := DecodeJSON([]byte(c.in), 0)
		if err != nil {
			t.Errorf("DecodeJSON(%s): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("DecodeJSON(%s) = %#v, want %#v", c.in, got, c.want)
		}
	}
	b, err := EncodeJSON(map[string]any{"b": []any{int64(1), 2.5, "<&>"}, "a": nil}, 0)
	if err != nil || string(b) != `{"a":null,"b":[1,2.5,"<&>"]}` {
		t.Fatalf("EncodeJSON = %s, %v", b, err)
	}
}

func TestJSONLimits(t *testing.T) {
	deep := strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1)
	if _, err := DecodeJSON([]byte(deep), 0); err == nil || !strings.Contains(err.Error(), "nesting") {
		t.Errorf("deep decode: %v", err)
	}
	okDeep := `"[[[[` + strings.Repeat("[", 200) + `"`
	if _, err := DecodeJSON([]byte(okDeep), 0); err != nil {
		t.Errorf("brackets in a string: %v", err)
	}
	if _, err := DecodeJSON([]byte(`"`+strings.Repeat("x", 100)+`"`), 50); !errors.Is(err, ErrJSONTooLarge) {
		t.Errorf("long decode: %v", err)
	}
	if _, err := DecodeJSON([]byte(`{} {}`), 0); err == nil {
		t.Error("trailing data accepted")
	}
	if _, err := EncodeJSON(strings.Repeat("x", 100), 50); !errors.Is(err, ErrJSONTooLarge) {
		t.Errorf("long encode: %v", err)
	}
	if _, err := EncodeJSON(math.NaN(), 0); err == nil {
		t.Error("NaN encoded")
	}
	if _, err := EncodeJSON(struct{}{}, 0); err == nil {
		t.Error("struct encoded")
	}
	var v any = "x"
	for range MaxJSONDepth + 1 {
		v = []any{v}
	}
	if _, err := EncodeJSON(v, 0); err == nil {
		t.Error("deep value encoded")
	}
}
