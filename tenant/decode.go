package tenant

import (
	"encoding"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// decoded is what decode learnt about a file besides the values: where
// its keys are, and which keys failed to decode (dotted, e.g.
// "limits.max_body"), so that validation does not report them twice.
type decoded struct {
	loc *locator
	bad map[string]bool
}

// decode strictly decodes file into v (a pointer to a struct). A TOML
// syntax error stops it (reported at its line and column). Otherwise
// every key is decoded on its own, so that one key of the wrong type does
// not hide the file's other errors: each wrong type and each unknown key
// is reported at FILE:LINE:COL. It returns nil when the file could not be
// read or parsed; v then holds nothing.
func (l *loader) decode(file string, v any) *decoded {
	src, err := os.ReadFile(file)
	if err != nil {
		l.add(file, 0, "cannot read: %v", unwrapPath(err))
		return nil
	}
	var top map[string]toml.Primitive
	md, err := toml.Decode(string(src), &top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			l.addAt(file, pe.Position.Line, pe.Position.Col, "%s", pe.Message)
		} else {
			l.add(file, 0, "%v", err)
		}
		return nil
	}
	d := &decoded{loc: newLocator(src), bad: map[string]bool{}}
	w := walker{l: l, file: file, md: &md, d: d, root: v}
	w.table(top, reflect.ValueOf(v).Elem(), nil, -1)
	return d
}

// walker decodes a file's tables key by key into a struct.
type walker struct {
	l    *loader
	file string
	md   *toml.MetaData
	d    *decoded
	root any // the value decode was called with, for suggestions
}

var (
	unmarshalerType     = reflect.TypeFor[toml.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// isTable reports whether t is decoded key by key: a struct that decodes
// itself (Duration, Size) is a value.
func isTable(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	p := reflect.PointerTo(t)
	return !p.Implements(unmarshalerType) && !p.Implements(textUnmarshalerType)
}

// fieldsByKey maps a struct type's toml keys to field indexes. Only tagged
// fields are keys: untagged ones (File, UID, ...) are set by Load.
func fieldsByKey(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("toml"), ","); f.IsExported() && name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}

// table decodes the keys of one table (path; idx >= 0 for the idx-th
// element of an array of tables) into the struct rv.
func (w *walker) table(prims map[string]toml.Primitive, rv reflect.Value, path []string, idx int) {
	fields := fieldsByKey(rv.Type())
	tbl := strings.Join(path, ".")
	keys := make([]string, 0, len(prims))
	for k := range prims {
		keys = append(keys, k)
	}
	// Report in file order.
	slices.SortFunc(keys, func(a, b string) int {
		la, _ := w.d.loc.pos(tbl, idx, a)
		lb, _ := w.d.loc.pos(tbl, idx, b)
		if la != lb {
			return la - lb
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys {
		dotted := strings.Join(append(slices.Clone(path), k), ".")
		line, col := w.d.loc.pos(tbl, idx, k)
		i, ok := fields[k]
		if !ok {
			w.l.addAt(w.file, line, w.d.loc.keyCol(line), "unknown key %q%s", dotted, suggest(k, w.root))
			continue
		}
		fv := rv.Field(i)
		prim := prims[k]
		switch {
		case isTable(fv.Type()):
			var sub map[string]toml.Primitive
			if err := w.md.PrimitiveDecode(prim, &sub); err != nil {
				w.typeError(dotted, line, col, fv.Type(), err)
				continue
			}
			w.table(sub, fv, append(slices.Clone(path), k), -1)
		case fv.Kind() == reflect.Slice && isTable(fv.Type().Elem()):
			var subs []map[string]toml.Primitive
			if err := w.md.PrimitiveDecode(prim, &subs); err != nil {
				w.typeError(dotted, line, col, fv.Type(), err)
				continue
			}
			fv.Set(reflect.MakeSlice(fv.Type(), len(subs), len(subs)))
			for j, sub := range subs {
				w.table(sub, fv.Index(j), append(slices.Clone(path), k), j)
			}
		default:
			if err := w.md.PrimitiveDecode(prim, fv.Addr().Interface()); err != nil {
				w.typeError(dotted, line, col, fv.Type(), err)
			}
		}
	}
}

var (
	tomlTypeRE = regexp.MustCompile(`TOML value has type (\w+)`)
	lineRE     = regexp.MustCompile(`line (\d+)`)
)

// typeError reports a key whose value could not be decoded into a field
// of type t: a wrong TOML type, or a value its type refused (an invalid
// duration or size).
func (w *walker) typeError(key string, line, col int, t reflect.Type, err error) {
	w.d.bad[key] = true
	var pe toml.ParseError
	if errors.As(err, &pe) { // a value the field's UnmarshalText/TOML refused
		if line == 0 {
			line, col = pe.Position.Line, pe.Position.Col
		}
		w.l.addAt(w.file, line, col, "%s: %s", key, pe.Message)
		return
	}
	msg := err.Error()
	if line == 0 { // a key the locator cannot find (inline tables)
		if m := lineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
	}
	if m := tomlTypeRE.FindStringSubmatch(msg); m != nil {
		w.l.addAt(w.file, line, col, "%s: want %s, not %s", key, typeWord(t), article(strings.ToLower(m[1])))
		return
	}
	w.l.addAt(w.file, line, col, "%s: want %s (%s)", key, typeWord(t), strings.TrimPrefix(msg, "toml: "))
}

// typeWord describes the TOML value a field of type t takes.
func typeWord(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Duration]():
		return `a duration string (e.g. "30s")`
	case reflect.TypeFor[Size]():
		return `a size (e.g. 65536 or "64KiB")`
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Pointer:
		return typeWord(t.Elem())
	case reflect.Slice:
		if isTable(t.Elem()) {
			return "an array of tables"
		}
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(typeWord(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "a table"
	}
	return t.String()
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

// addAt records an error at a line and column (col 0: unknown).
func (l *loader) addAt(file string, line, col int, format string, args ...any) {
	l.errs = append(l.errs, &Error{File: file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
}
