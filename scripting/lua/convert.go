package lua

import (
	"errors"
	"fmt"
	"math"

	glua "github.com/yuin/gopher-lua"

	"github.com/hostd/hostd/scripting"
)

// toLua converts a JSON-able Go value into a Lua value; lists and maps
// become new tables. A list is marked with hostd.json_array_mt (so that an
// empty one encodes back as []), and a nil in it is hostd.json_null; a
// nil value in a map leaves the key out.
func (v *vm) toLua(x any) glua.LValue {
	L := v.L
	switch x := x.(type) {
	case nil:
		return glua.LNil
	case bool:
		return glua.LBool(x)
	case float64:
		return glua.LNumber(x)
	case int64:
		return glua.LNumber(x)
	case int:
		return glua.LNumber(x)
	case string:
		return glua.LString(x)
	case []any:
		t := L.CreateTable(len(x), 0)
		for i, e := range x {
			if e == nil {
				t.RawSetInt(i+1, v.jsonNull)
			} else {
				t.RawSetInt(i+1, v.toLua(e))
			}
		}
		t.Metatable = v.jsonArrayMT
		return t
	case map[string]any:
		t := L.CreateTable(0, len(x))
		for k, e := range x {
			t.RawSetString(k, v.toLua(e))
		}
		return t
	default:
		return glua.LString(fmt.Sprint(x))
	}
}

var errTooLarge = errors.New("value is larger than the input limit")

// fromLua converts a Lua value into a JSON-able Go value (nil, bool, int64
// for integral numbers, float64, string, []any, map[string]any). The
// rule for tables: a table whose metatable is hostd.json_array_mt becomes
// a list of its elements 1..#t (hostd.json_empty_array is an empty list);
// otherwise a table whose keys are exactly 1..n (n > 0) becomes a list,
// any other table an object with string keys (numbers are formatted), and
// an empty table an empty object. hostd.json_null is nil (JSON null), so
// a list can hold nulls. The estimated encoded size is bounded by the
// input limit, nesting by scripting.MaxJSONDepth; cycles, functions and
// other userdata are errors.
func (v *vm) fromLua(lv glua.LValue) (any, error) {
	c := converter{budget: v.e.cfg.Limits.MaxInput, v: v}
	return c.conv(lv, 0)
}

type converter struct {
	budget int
	v      *vm
}

func (c *converter) spend(n int) error {
	c.budget -= n
	if c.budget < 0 {
		return errTooLarge
	}
	return nil
}

func (c *converter) conv(lv glua.LValue, depth int) (any, error) {
	switch x := lv.(type) {
	case *glua.LNilType:
		return nil, c.spend(4)
	case glua.LBool:
		return bool(x), c.spend(5)
	case glua.LNumber:
		if err := c.spend(8); err != nil {
			return nil, err
		}
		f := float64(x)
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), nil
		}
		return f, nil
	case glua.LString:
		return string(x), c.spend(len(x) + 2)
	case *glua.LUserData:
		switch x {
		case c.v.jsonNull:
			return nil, c.spend(4)
		case c.v.jsonEmptyArray:
			return []any{}, c.spend(2)
		}
		return nil, fmt.Errorf("cannot convert a %s", lv.Type())
	case *glua.LTable:
		if depth >= scripting.MaxJSONDepth {
			return nil, fmt.Errorf("nesting deeper than %d (or a cycle)", scripting.MaxJSONDepth)
		}
		return c.table(x, depth)
	default:
		return nil, fmt.Errorf("cannot convert a %s", lv.Type())
	}
}

func (c *converter) table(t *glua.LTable, depth int) (any, error) {
	if err := c.spend(2); err != nil {
		return nil, err
	}
	var err error
	if t.Metatable == c.v.jsonArrayMT {
		n := t.Len()
		l := make([]any, n)
		for i := 1; i <= n && err == nil; i++ {
			l[i-1], err = c.conv(t.RawGetInt(i), depth+1)
		}
		return l, err
	}
	n := 0
	isList := true
	t.ForEach(func(k, _ glua.LValue) {
		n++
		if num, ok := k.(glua.LNumber); !ok || float64(num) != math.Trunc(float64(num)) || num < 1 {
			isList = false
		}
	})
	if isList && n > 0 && t.MaxN() == n {
		l := make([]any, n)
		for i := 1; i <= n && err == nil; i++ {
			l[i-1], err = c.conv(t.RawGetInt(i), depth+1)
		}
		return l, err
	}
	m := make(map[string]any, n)
	t.ForEach(func(k, val glua.LValue) {
		if err != nil {
			return
		}
		var key string
		switch k := k.(type) {
		case glua.LString:
			key = string(k)
		case glua.LNumber:
			key = k.String()
		default:
			err = fmt.Errorf("cannot convert a table key of type %s", k.Type())
			return
		}
		if err = c.spend(len(key) + 4); err != nil {
			return
		}
		m[key], err = c.conv(val, depth+1)
	})
	return m, err
}
