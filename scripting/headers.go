package scripting

import (
	"encoding/base64"
	"net/http"
	"strings"
)

// ValidHeaderName reports whether s is an HTTP header field name (an RFC
// 9110 token) a hook may set.
func ValidHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// ValidHeaderValue reports whether s is a header value a hook may set: no
// control characters but tab, so a hook cannot split the response.
func ValidHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// BasicAuth returns the user and password of an Authorization header
// value of the Basic scheme (r:basic_auth in hooks); ok is false when auth
// is not one.
func BasicAuth(auth string) (user, pass string, ok bool) {
	const prefix = "basic "
	if len(auth) < len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return "", "", false
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(auth[len(prefix):]))
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(dec), ":")
}

// HeaderIn returns request header name (case-insensitive) as hooks see it
// (r.headers_in[name]): its values joined by ", " ("; " for Cookie); ok
// is false when it is absent.
func HeaderIn(h http.Header, name string) (value string, ok bool) {
	vals := h.Values(name)
	switch len(vals) {
	case 0:
		return "", false
	case 1:
		return vals[0], true
	}
	sep := ", "
	if strings.EqualFold(name, "Cookie") {
		sep = "; "
	}
	return strings.Join(vals, sep), true
}
