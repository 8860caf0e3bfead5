// Package logtext makes what a client or a tenant sent safe to write into a
// log file: one event is one line, and no field can forge another line, hide
// text from a terminal or drive one. Every hostd log writer uses it (access
// logs in both formats, the trace stream, tenant error logs, CGI stderr, the
// server log), and so can any other handler that logs request data (a
// FastCGI client's stderr).
//
// Escaped, as \xHH: every byte below 0x20 (CR, LF, ESC, NUL, TAB, ...), DEL,
// the backslash itself (so a literal "\x0a" in the input cannot pass for an
// escape) and every byte that is not valid UTF-8. Escaped as \u+HHHH: the C1
// control characters U+0080 to U+009F (terminals treat U+009B as CSI), the
// line and paragraph separators U+2028 and U+2029, and the bidirectional
// overrides and isolates U+202A to U+202E and U+2066 to U+2069 (which can
// make a line read differently from what it says). Everything else, UTF-8
// text included, is kept as is.
package logtext

import "unicode/utf8"

// What escape escapes besides the always-escaped set.
const (
	plain  = 0
	quote  = 1 << iota // '"': the value is written between double quotes
	spaces             // ' ': the value is a space-separated field
)

const hexDigits = "0123456789abcdef"

// Escape returns s with control characters, backslashes, invalid UTF-8 and
// the invisible formatting characters escaped (see the package
// documentation). It returns s itself when nothing needs escaping.
func Escape(s string) string { return escapeString(s, plain) }

// Quote is Escape that also escapes '"', for a value written between
// double quotes.
func Quote(s string) string { return escapeString(s, quote) }

// Field is Escape that also escapes '"' and ' ', for a value written as one
// space-separated field.
func Field(s string) string { return escapeString(s, quote|spaces) }

// Append appends Escape(s) to dst.
func Append(dst []byte, s string) []byte { return appendEscaped(dst, s, plain) }

// AppendField appends Field(s) to dst.
func AppendField(dst []byte, s string) []byte { return appendEscaped(dst, s, quote|spaces) }

// AppendBytes appends Escape(string(b)) to dst without converting b.
func AppendBytes(dst, b []byte) []byte {
	if clean(b, plain) {
		return append(dst, b...)
	}
	return appendEscaped(dst, string(b), plain)
}

func escapeString(s string, mode int) string {
	if clean(s, mode) {
		return s
	}
	return string(appendEscaped(make([]byte, 0, len(s)+16), s, mode))
}

// clean reports whether s needs no escaping: the fast path for the common,
// printable ASCII case.
func clean[T string | []byte](s T, mode int) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '\\' || (c == '"' && mode&quote != 0) || (c == ' ' && mode&spaces != 0) {
			return false
		}
	}
	return true
}

func appendEscaped(dst []byte, s string, mode int) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || c == '\\' || (c == '"' && mode&quote != 0) || (c == ' ' && mode&spaces != 0) {
				dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
			} else {
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		case invisible(r):
			dst = append(dst, '\\', 'u', '+',
				hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

// invisible reports whether r is a C1 control, a line or paragraph
// separator, or a bidirectional formatting character.
func invisible(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}
