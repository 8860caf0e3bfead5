package tenant

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// TLS profiles (server.tls_profile, a vhost's tls_profile).
const (
	// TLSIntermediate is Mozilla's "intermediate" profile: TLS 1.2 with
	// ECDHE key exchange and AEAD suites only, and TLS 1.3.
	TLSIntermediate = "intermediate"
	// TLSModern is Mozilla's "modern" profile: TLS 1.3 only.
	TLSModern = "modern"
)

// checkListeners validates the [server] listen addresses and that no two
// of them are the same.
func (l *loader) checkListeners(file string, loc *locator, s *Server) {
	seen := map[string]string{}
	for _, a := range []struct{ key, addr string }{
		{"listen_https", s.ListenHTTPS}, {"listen_http", s.ListenHTTP}, {"admin_listen", s.AdminListen},
	} {
		if a.addr == "" {
			continue
		}
		line, col := loc.pos("server", -1, a.key)
		if err := checkAddr(a.addr); err != nil {
			l.addAt(file, line, col, "%s %q: %v", a.key, a.addr, err)
			continue
		}
		if _, port, _ := net.SplitHostPort(a.addr); port == "0" {
			continue // any free port: never the same
		}
		if prev, ok := seen[a.addr]; ok {
			l.addAt(file, line, col, "%s %q is also %s: give each listener its own port", a.key, a.addr, prev)
		}
		seen[a.addr] = a.key
	}
}

// checkAddr accepts HOST:PORT where HOST is empty (all addresses), an IP
// address or "localhost", and PORT is 0 (any free port) to 65535.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New(`want HOST:PORT (e.g. ":443", "127.0.0.1:8443", "[::1]:8443")`)
	}
	n, err := strconv.ParseUint(port, 10, 32)
	switch {
	case err != nil:
		return fmt.Errorf("port %q is not a number", port)
	case n > 65535:
		return fmt.Errorf("port %d is out of range (0 to 65535)", n)
	}
	if host != "" && host != "localhost" {
		if _, err := netip.ParseAddr(host); err != nil {
			return fmt.Errorf("%q is not an IP address (use an address of this machine, or leave it out for all)", host)
		}
	}
	return nil
}

func (l *loader) checkTLSProfile(file string, line int, p string) {
	switch p {
	case "", TLSIntermediate, TLSModern:
	default:
		l.add(file, line, "tls_profile %q: want %q (default) or %q (TLS 1.3 only)", p, TLSIntermediate, TLSModern)
	}
}

// HSTS is a vhost's hsts key: a boolean or a Strict-Transport-Security
// header value. After Load it is the header value, "" when off.
type HSTS string

// DefaultHSTS is the header hsts = true sends: one year.
const DefaultHSTS = "max-age=31536000"

// UnmarshalTOML accepts true, false or a header value.
func (h *HSTS) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case bool:
		*h = ""
		if x {
			*h = DefaultHSTS
		}
		return nil
	case string:
		*h = HSTS(strings.TrimSpace(x))
		return nil
	}
	return fmt.Errorf(`hsts: want true, false or a header value such as "max-age=31536000; includeSubDomains", not %T`, v)
}

// checkHSTS validates a header value: max-age=SECONDS, then optionally
// includeSubDomains and preload.
func (l *loader) checkHSTS(file string, line int, h *HSTS) {
	if *h == "" {
		return
	}
	maxAge := false
	for _, d := range strings.Split(string(*h), ";") {
		d = strings.TrimSpace(d)
		k, val, _ := strings.Cut(d, "=")
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "max-age":
			if _, err := strconv.ParseUint(strings.Trim(strings.TrimSpace(val), `"`), 10, 32); err != nil {
				l.add(file, line, "hsts %q: max-age wants a number of seconds", string(*h))
				return
			}
			maxAge = true
		case "includesubdomains", "preload", "":
		default:
			l.add(file, line, "hsts %q: unknown directive %q (want max-age=SECONDS, includeSubDomains, preload)", string(*h), d)
			return
		}
	}
	if !maxAge {
		l.add(file, line, "hsts %q: max-age=SECONDS is required (e.g. \"max-age=31536000\")", string(*h))
	}
}

// checkPathPattern validates a hook's or respond's path: "" (respond
// requires one), an exact path, or a prefix ending in "*". A "*" anywhere
// else would never match: patterns are not globs.
func checkPathPattern(p string) error {
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") {
		return errors.New("must start with '/'")
	}
	if i := strings.IndexByte(p, '*'); i >= 0 && i != len(p)-1 {
		return fmt.Errorf("'*' is only allowed at the end, as a prefix match (e.g. %q); the path is matched literally, not as a glob", p[:i+1])
	}
	return nil
}

// ServerKeyPos returns the line and column of a [server] key in the main
// file (0, 0 when the file does not set it), for errors found after Load,
// such as a listen address that cannot be bound.
func (c *Config) ServerKeyPos(key string) (line, col int) {
	if c.mainLoc == nil {
		return 0, 0
	}
	return c.mainLoc.pos("server", -1, key)
}

// Line returns the line of server_name in the vhost's file.
func (v *VHost) Line() int { return v.line }
