package host

import (
	"net/url"
	"strings"
)

// redactedValue replaces the value of a redacted query parameter.
const redactedValue = "REDACTED"

// redactor replaces the values of secret query parameters
// (server.log_redact_query) in what logs and traces write: access logs,
// per-vhost access logs, the Referer they quote, and `hostd trace`. A nil
// redactor changes nothing. It is immutable and safe for concurrent use.
type redactor struct {
	names map[string]bool // lower-cased parameter names
}

func newRedactor(names []string) *redactor {
	if len(names) == 0 {
		return nil
	}
	r := &redactor{names: make(map[string]bool, len(names))}
	for _, n := range names {
		r.names[strings.ToLower(n)] = true
	}
	return r
}

// uri returns u (a request URI or a URL) with the value of every listed
// query parameter replaced; the rest is kept byte for byte. A name is
// compared after percent-decoding, so "%74oken=" is redacted too.
func (r *redactor) uri(u string) string {
	if r == nil {
		return u
	}
	q := strings.IndexByte(u, '?')
	if q < 0 {
		return u
	}
	query, frag := u[q+1:], ""
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query, frag = query[:h], query[h:]
	}
	var b strings.Builder
	changed := false
	for i, part := range strings.FieldsFunc(query, func(c rune) bool { return c == '&' || c == ';' }) {
		name, _, hasValue := strings.Cut(part, "=")
		key, err := url.QueryUnescape(name)
		if err != nil {
			key = name
		}
		if i > 0 {
			b.WriteByte('&')
		}
		if hasValue && r.names[strings.ToLower(strings.TrimSpace(key))] {
			b.WriteString(name)
			b.WriteString("=" + redactedValue)
			changed = true
			continue
		}
		b.WriteString(part)
	}
	if !changed {
		return u
	}
	return u[:q+1] + b.String() + frag
}
