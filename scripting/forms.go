package scripting

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"sort"
	"strings"
)

// MaxFormParts bounds the fields and files of one form body.
const MaxFormParts = 1000

// ErrFormPartTooLarge is returned by ParseForm for a multipart part longer
// than its limit; it wraps ErrBodyTooLarge (host answers 413).
var ErrFormPartTooLarge = fmt.Errorf("form part too large (limits.max_form_part): %w", ErrBodyTooLarge)

// EscapeURI escapes s for a URL query component or path segment: every
// byte but the unreserved A-Z a-z 0-9 - . _ ~ becomes %XX; with form, a
// space becomes '+' (application/x-www-form-urlencoded).
func EscapeURI(s string, form bool) string {
	e := url.QueryEscape(s)
	if !form {
		e = strings.ReplaceAll(e, "+", "%20")
	}
	return e
}

// UnescapeURI decodes %XX escapes; with form, '+' is a space as well.
func UnescapeURI(s string, form bool) (string, error) {
	if form {
		return url.QueryUnescape(s)
	}
	return url.PathUnescape(s)
}

// ParseArgs parses a query string into name -> value, or name -> list of
// values for a repeated name (r.args). Malformed pairs are skipped.
func ParseArgs(q string) map[string]any {
	m := map[string]any{}
	if q == "" {
		return m
	}
	vals, _ := url.ParseQuery(q) // keeps the well-formed pairs
	for k, vs := range vals {
		m[k] = multiValue(vs)
	}
	return m
}

// multiValue is how hooks see the values of a name that may repeat (a
// query argument, a header): the string when there is one, else a list.
func multiValue(vs []string) any {
	if len(vs) == 1 {
		return vs[0]
	}
	l := make([]any, len(vs))
	for i, s := range vs {
		l[i] = s
	}
	return l
}

// EncodeArgs encodes name -> value pairs as a query string, names sorted:
// a value is a string, a number, true (the name alone), false or nil
// (left out) or a list of those (the name repeated).
func EncodeArgs(args map[string]any) (string, error) {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	add := func(k string, v any) error {
		var s string
		switch x := v.(type) {
		case nil:
			return nil
		case bool:
			if !x {
				return nil
			}
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(EscapeURI(k, true))
			return nil
		case string:
			s = x
		case int64, int, float64:
			s = fmt.Sprint(x)
		default:
			return fmt.Errorf("encode_args: value of %q must be a string, number, boolean or list", k)
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(EscapeURI(k, true))
		b.WriteByte('=')
		b.WriteString(EscapeURI(s, true))
		return nil
	}
	for _, k := range keys {
		if l, ok := args[k].([]any); ok {
			for _, v := range l {
				if _, nested := v.([]any); nested {
					return "", fmt.Errorf("encode_args: value of %q: lists cannot nest", k)
				}
				if err := add(k, v); err != nil {
					return "", err
				}
			}
			continue
		}
		if err := add(k, args[k]); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// FormLimits bound ParseForm.
type FormLimits struct {
	// MaxPart is the largest multipart part, in bytes (0: no limit but
	// the body's).
	MaxPart int
}

// ParseForm parses a request body by its Content-Type (r:post_args):
// application/x-www-form-urlencoded into name -> value (a list for a
// repeated name); multipart/form-data likewise, where an uploaded file is
// a map with name (the field), filename, type, size and content. Any other
// type gives an empty map. A malformed body is an error; a part over
// lim.MaxPart is ErrFormPartTooLarge.
func ParseForm(contentType string, body []byte, lim FormLimits) (map[string]any, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return map[string]any{}, nil
	}
	switch mt {
	case "application/x-www-form-urlencoded":
		if bytes.Count(body, []byte("&")) >= MaxFormParts {
			return nil, fmt.Errorf("form has more than %d fields", MaxFormParts)
		}
		if _, err := url.ParseQuery(string(body)); err != nil {
			return nil, fmt.Errorf("malformed form body: %w", err)
		}
		return ParseArgs(string(body)), nil
	case "multipart/form-data":
		return parseMultipart(params["boundary"], body, lim)
	}
	return map[string]any{}, nil
}

func parseMultipart(boundary string, body []byte, lim FormLimits) (map[string]any, error) {
	if boundary == "" {
		return nil, errors.New("multipart form without boundary")
	}
	m := map[string]any{}
	add := func(k string, v any) {
		switch old := m[k].(type) {
		case nil:
			m[k] = v
		case []any:
			m[k] = append(old, v)
		default:
			m[k] = []any{old, v}
		}
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for n := 0; ; n++ {
		p, err := mr.NextPart()
		if err == io.EOF {
			return m, nil
		}
		if err != nil {
			return nil, fmt.Errorf("malformed multipart form: %w", err)
		}
		if n >= MaxFormParts {
			return nil, fmt.Errorf("form has more than %d parts", MaxFormParts)
		}
		var r io.Reader = p
		if lim.MaxPart > 0 {
			r = io.LimitReader(p, int64(lim.MaxPart)+1)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("malformed multipart form: %w", err)
		}
		if lim.MaxPart > 0 && len(b) > lim.MaxPart {
			return nil, ErrFormPartTooLarge
		}
		name := p.FormName()
		if name == "" {
			continue // not a form field
		}
		if fn := p.FileName(); fn != "" || hasFilenameParam(p) {
			typ := p.Header.Get("Content-Type")
			if typ == "" {
				typ = "application/octet-stream"
			}
			add(name, map[string]any{"name": name, "filename": fn, "type": typ, "size": int64(len(b)), "content": string(b)})
			continue
		}
		add(name, string(b))
	}
}

// hasFilenameParam reports whether the part's Content-Disposition has a
// filename parameter (an upload with an empty file name).
func hasFilenameParam(p *multipart.Part) bool {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return false
	}
	_, ok := params["filename"]
	return ok
}
