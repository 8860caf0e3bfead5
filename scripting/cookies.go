package scripting

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// MaxCookies bounds the cookies ParseCookies returns.
const MaxCookies = 200

// ParseCookies returns the request's cookies by name (r.cookies): the
// first of a repeated name wins, quotes around a value are removed, and
// malformed pairs are skipped. Values are not URL-decoded.
func ParseCookies(h http.Header) map[string]string {
	m := make(map[string]string)
	EachCookie(h, func(name, val string) bool {
		if _, dup := m[name]; !dup {
			m[name] = val
		}
		return len(m) < MaxCookies
	})
	return m
}

// Cookie returns the value of the request cookie name (the first, as
// ParseCookies), without allocating.
func Cookie(h http.Header, name string) (value string, ok bool) {
	EachCookie(h, func(n, v string) bool {
		if n == name {
			value, ok = v, true
			return false
		}
		return true
	})
	return value, ok
}

// EachCookie calls f with each well-formed cookie of the request's Cookie
// headers, in order, until f returns false.
func EachCookie(h http.Header, f func(name, value string) bool) {
	for _, line := range h["Cookie"] {
		for len(line) > 0 {
			var part string
			part, line, _ = strings.Cut(line, ";")
			name, val, ok := strings.Cut(part, "=")
			name = strings.TrimSpace(name)
			if !ok || name == "" || !ValidHeaderName(name) {
				continue
			}
			val = strings.TrimSpace(val)
			if len(val) > 1 && val[0] == '"' && val[len(val)-1] == '"' {
				val = val[1 : len(val)-1]
			}
			if !f(name, val) {
				return
			}
		}
	}
}

// NewCookie builds the cookie of r:set_cookie from its options: name and
// value (strings, required), path, domain, max_age (seconds; 0 or less
// expires it now), expires (Unix seconds or an HTTP date), secure,
// http_only (booleans), same_site ("Strict", "Lax" or "None"; None needs
// secure). Invalid values are errors: nothing is silently dropped.
func NewCookie(opts map[string]any) (*http.Cookie, error) {
	c := &http.Cookie{}
	str := func(k string) (string, error) {
		switch x := opts[k].(type) {
		case nil:
			return "", nil
		case string:
			return x, nil
		case int64, float64, int:
			return fmt.Sprint(x), nil
		}
		return "", fmt.Errorf("set_cookie: %s must be a string", k)
	}
	flag := func(k string) (bool, error) {
		switch x := opts[k].(type) {
		case nil:
			return false, nil
		case bool:
			return x, nil
		}
		return false, fmt.Errorf("set_cookie: %s must be a boolean", k)
	}
	var err error
	for k := range opts {
		switch k {
		case "name", "value", "path", "domain", "max_age", "expires", "secure", "http_only", "same_site":
		default:
			return nil, fmt.Errorf("set_cookie: unknown option %q (want name, value, path, domain, max_age, expires, secure, http_only, same_site)", k)
		}
	}
	if c.Name, err = str("name"); err != nil {
		return nil, err
	}
	if c.Name == "" || !ValidHeaderName(c.Name) {
		return nil, errors.New("set_cookie: name must be a non-empty token")
	}
	if c.Value, err = str("value"); err != nil {
		return nil, err
	}
	if c.Path, err = str("path"); err != nil {
		return nil, err
	}
	if c.Domain, err = str("domain"); err != nil {
		return nil, err
	}
	if c.Secure, err = flag("secure"); err != nil {
		return nil, err
	}
	if c.HttpOnly, err = flag("http_only"); err != nil {
		return nil, err
	}
	switch x := opts["max_age"].(type) {
	case nil:
	case int64, float64:
		f, _ := x.(float64)
		if i, ok := x.(int64); ok {
			f = float64(i)
		}
		if math.IsNaN(f) || f > 1e10 {
			return nil, errors.New("set_cookie: max_age must be a number of seconds")
		}
		if f <= 0 {
			c.MaxAge = -1 // Max-Age=0: expire now
		} else {
			c.MaxAge = int(f)
		}
	default:
		return nil, errors.New("set_cookie: max_age must be a number of seconds")
	}
	switch x := opts["expires"].(type) {
	case nil:
	case int64:
		c.Expires = time.Unix(x, 0)
	case float64:
		c.Expires = time.Unix(int64(x), 0)
	case string:
		t, err := http.ParseTime(x)
		if err != nil {
			return nil, errors.New("set_cookie: expires must be Unix seconds or an HTTP date")
		}
		c.Expires = t
	default:
		return nil, errors.New("set_cookie: expires must be Unix seconds or an HTTP date")
	}
	ss, err := str("same_site")
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(ss) {
	case "":
	case "strict":
		c.SameSite = http.SameSiteStrictMode
	case "lax":
		c.SameSite = http.SameSiteLaxMode
	case "none":
		if !c.Secure {
			return nil, errors.New("set_cookie: same_site None needs secure = true (browsers refuse it otherwise)")
		}
		c.SameSite = http.SameSiteNoneMode
	default:
		return nil, errors.New(`set_cookie: same_site must be "Strict", "Lax" or "None"`)
	}
	if err := c.Valid(); err != nil {
		return nil, fmt.Errorf("set_cookie: %w", err)
	}
	return c, nil
}

// SetCookie adds c's Set-Cookie header to h, replacing an earlier one of
// the same name.
func SetCookie(h http.Header, c *http.Cookie) {
	RemoveSetCookie(h, c.Name)
	h.Add("Set-Cookie", c.String())
}

// RemoveSetCookie deletes the Set-Cookie headers of the cookie name.
func RemoveSetCookie(h http.Header, name string) {
	old := h.Values("Set-Cookie")
	if len(old) == 0 {
		return
	}
	h.Del("Set-Cookie")
	for _, v := range old {
		if !strings.HasPrefix(v, name+"=") {
			h.Add("Set-Cookie", v)
		}
	}
}
