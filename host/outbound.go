package host

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"time"

	"github.com/hostd/hostd/scripting/outbound"
	"github.com/hostd/hostd/tenant"
)

// newOutbound returns the vhost's client for hostd.http.request, or nil
// when its outbound key is empty. The addresses of every session store in
// the configuration are protected: a hook reaches them only through an
// address entry naming them exactly.
func newOutbound(cfg *tenant.Config, vc *tenant.VHost) (*outbound.Client, error) {
	if len(vc.Outbound) == 0 {
		return nil, nil
	}
	return outbound.New(outbound.Options{Allow: vc.Outbound, Protected: storeAddrs(cfg, vc), MaxBody: outbound.DefaultMaxBody})
}

// storeAddrs returns the addresses of the session stores the main file,
// its vhosts and vc name (Redis URLs and their addr parameters, memcached
// servers), host names resolved.
func storeAddrs(cfg *tenant.Config, vc *tenant.VHost) []netip.Addr {
	var hosts []string
	add := func(s tenant.Sessions) {
		if u, err := url.Parse(s.URL); err == nil && u.Host != "" {
			hosts = append(hosts, u.Hostname())
			for _, a := range u.Query()["addr"] {
				if h, _, err := net.SplitHostPort(a); err == nil {
					hosts = append(hosts, h)
				}
			}
		}
		for _, a := range append(append([]string(nil), s.Servers...), s.Backup...) {
			if h, _, err := net.SplitHostPort(a); err == nil {
				hosts = append(hosts, h)
			}
		}
	}
	if cfg != nil {
		add(cfg.Sessions)
		for _, v := range cfg.VHosts {
			add(v.Sessions)
		}
	}
	add(vc.Sessions)
	var out []netip.Addr
	for _, h := range hosts {
		if a, err := netip.ParseAddr(h); err == nil {
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
