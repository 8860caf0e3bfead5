package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// ErrRefused is the error of a request, redirect or connection whose
// destination the vhost's allowlist does not allow.
var ErrRefused = errors.New("outbound: destination not allowed")

// Policy is a parsed allowlist: host names (exact, or "*.example.com" for
// any name below example.com) and address prefixes. The zero value
// allows nothing. It is immutable and safe for concurrent use.
type Policy struct {
	names    []string // lower case, no trailing dot; "*.x" matches below x
	prefixes []netip.Prefix
	// protected are the addresses of hostd's own stores: reachable only
	// through an address entry of exactly that address, or never when
	// storesClosed.
	protected    map[netip.Addr]bool
	storesClosed bool
}

// CheckEntry reports whether s is a valid allowlist entry: a host name
// ("api.example.com", "*.example.com"), an IP address ("10.1.2.3",
// "fd00::1") or a CIDR prefix ("10.1.2.0/24"). Ports and schemes are not
// part of an entry.
func CheckEntry(s string) error {
	_, _, err := parseEntry(s)
	return err
}

func parseEntry(s string) (name string, p netip.Prefix, err error) {
	e := strings.TrimSpace(s)
	if e != s || e == "" {
		return "", p, fmt.Errorf("want a host name, an IP address or a CIDR prefix (e.g. \"api.example.com\", \"10.1.2.0/24\")")
	}
	if strings.Contains(e, "://") {
		return "", p, fmt.Errorf("want a host name without scheme or port (e.g. \"api.example.com\")")
	}
	if strings.Contains(e, "/") {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return "", p, fmt.Errorf("invalid CIDR prefix (e.g. \"10.1.2.0/24\")")
		}
		if p.Addr().Zone() != "" {
			return "", p, fmt.Errorf("zones are not allowed")
		}
		return "", p.Masked(), nil
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")); err == nil {
		if a.Zone() != "" {
			return "", p, fmt.Errorf("zones are not allowed")
		}
		a = a.Unmap()
		return "", netip.PrefixFrom(a, a.BitLen()), nil
	}
	n := strings.ToLower(strings.TrimSuffix(e, "."))
	body := strings.TrimPrefix(n, "*.")
	if strings.ContainsAny(e, ":@/?#") {
		return "", p, fmt.Errorf("want a host name without scheme or port (e.g. \"api.example.com\")")
	}
	if !validName(body) {
		return "", p, fmt.Errorf("invalid host name (want e.g. \"api.example.com\" or \"*.example.com\")")
	}
	return n, p, nil
}

// validName reports whether s is a DNS host name of letters, digits,
// hyphens and underscores in labels of 1 to 63 bytes.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// NewPolicy parses allowlist entries (see CheckEntry); protected are the
// addresses of hostd's own session stores.
func NewPolicy(entries []string, protected []netip.Addr) (*Policy, error) {
	p := &Policy{protected: make(map[netip.Addr]bool)}
	for _, e := range entries {
		n, pre, err := parseEntry(e)
		if err != nil {
			return nil, fmt.Errorf("outbound entry %q: %w", e, err)
		}
		if n != "" {
			p.names = append(p.names, n)
		} else {
			p.prefixes = append(p.prefixes, pre)
		}
	}
	for _, a := range protected {
		p.protected[a.Unmap()] = true
	}
	return p, nil
}

// Empty reports whether the policy allows nothing.
func (p *Policy) Empty() bool { return p == nil || len(p.names) == 0 && len(p.prefixes) == 0 }

// AllowHost reports whether a URL's host (without port) may be requested:
// a name that matches a name entry, or an IP address inside an address
// entry. The address a name resolves to is checked by AllowAddr.
func (p *Policy) AllowHost(host string) bool {
	if p == nil {
		return false
	}
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return false
		}
		a = a.Unmap()
		for _, pre := range p.prefixes {
			if pre.Contains(a) {
				return true
			}
		}
		return false
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	for _, n := range p.names {
		if n == h || strings.HasPrefix(n, "*.") && strings.HasSuffix(h, n[1:]) {
			return true
		}
	}
	return false
}

// AllowAddr reports whether the client may connect to address a (after
// DNS resolution). An address of hostd's own stores needs an address
// entry of exactly that address; another special address (loopback,
// link-local, private, shared, multicast, reserved, or a translation
// prefix embedding one) needs an address entry no wider than its special
// range; any other address is allowed (the URL's host was checked by
// AllowHost).
func (p *Policy) AllowAddr(a netip.Addr) bool {
	if p == nil || !a.IsValid() {
		return false
	}
	a = a.WithZone("").Unmap()
	if p.protected[a] {
		if p.storesClosed {
			return false
		}
		for _, pre := range p.prefixes {
			if pre.IsSingleIP() && pre.Addr() == a {
				return true
			}
		}
		return false
	}
	if r, special := specialRange(a); special {
		for _, pre := range p.prefixes {
			if pre.Contains(a) && pre.Bits() >= r.Bits() {
				return true
			}
		}
		return false
	}
	return true
}

var specialV4 = mustPrefixes(
	"0.0.0.0/8",       // this network
	"10.0.0.0/8",      // private
	"100.64.0.0/10",   // shared (carrier-grade NAT)
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, cloud metadata
	"172.16.0.0/12",   // private
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // documentation
	"192.88.99.0/24",  // 6to4 relay anycast
	"192.168.0.0/16",  // private
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // documentation
	"203.0.113.0/24",  // documentation
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, broadcast
)

var specialV6 = mustPrefixes(
	"::/96",          // unspecified, loopback, IPv4-compatible
	"::ffff:0:0/96",  // IPv4-mapped (unmapped before the check)
	"64:ff9b:1::/48", // local-use IPv4/IPv6 translation
	"100::/64",       // discard
	"2001::/32",      // Teredo (embeds a client address)
	"2001:db8::/32",  // documentation
	"fc00::/7",       // unique local
	"fe80::/10",      // link-local
	"fec0::/10",      // site-local (deprecated)
	"ff00::/8",       // multicast
)

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// specialRange returns the special range a falls in, if any. An IPv6
// address of the NAT64 (64:ff9b::/96) or 6to4 (2002::/16) prefix is
// special when the IPv4 address it embeds is; its range is then the whole
// translation prefix.
func specialRange(a netip.Addr) (netip.Prefix, bool) {
	list := specialV4
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			v4 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
			if _, sp := specialRange(v4); sp {
				return nat64, true
			}
			return netip.Prefix{}, false
		case sixToFour.Contains(a):
			v4 := netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
			if _, sp := specialRange(v4); sp {
				return sixToFour, true
			}
			return netip.Prefix{}, false
		}
		list = specialV6
	}
	for _, p := range list {
		if p.Contains(a) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// ResolveHosts returns the addresses of hosts (IP addresses as they are,
// names resolved with a short timeout each; names that do not resolve are
// left out), for Options.Protected.
func ResolveHosts(hosts []string) []netip.Addr {
	var out []netip.Addr
	seen := map[string]bool{}
	for _, h := range hosts {
		if seen[h] {
			continue
		}
		seen[h] = true
		if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); err == nil {
			out = append(out, a.Unmap())
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", h)
		cancel()
		if err == nil {
			for _, a := range addrs {
				out = append(out, a.Unmap())
			}
		}
	}
	return out
}
