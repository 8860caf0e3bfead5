package host

import (
	"net"
	"net/http"
	"strings"

	"github.com/hostd/hostd/tenant"
)

// routeHTTPS is the route stage of the TLS listener. The Host header must
// name the same vhost as the connection's SNI: a request for bob.example
// inside alice.example's TLS session gets 421, never bob's content.
func (s *Server) routeHTTPS(x *exchange, next func(*exchange)) {
	r := x.r
	rt := s.routes.Load()
	v := rt.lookup(canonicalHost(r.Host))
	switch {
	case r.TLS != nil && r.TLS.ServerName != "" && rt.lookup(canonicalHost(r.TLS.ServerName)) != v:
		s.stats.misdirected.Add(1)
		httpError(x.w, http.StatusMisdirectedRequest, "the Host header does not match the TLS server name")
	case v == nil:
		s.stats.unknownHostHTTPS.Add(1)
		httpError(x.w, http.StatusNotFound, "no site is configured for this host name")
	default:
		x.name, x.v = v.cfg.ServerName, v
		if v.cfg.HSTS != "" {
			x.w.Header().Set("Strict-Transport-Security", string(v.cfg.HSTS))
		}
		next(x)
	}
}

// routeHTTP is the route stage of the plain listener: vhosts with
// allow_http are served, others are redirected (308) to the same host and
// path over HTTPS.
func (s *Server) routeHTTP(x *exchange, next func(*exchange)) {
	r := x.r
	host := canonicalHost(r.Host)
	v := s.routes.Load().lookup(host)
	switch {
	case v == nil:
		s.stats.unknownHostHTTP.Add(1)
		httpError(x.w, http.StatusNotFound, "no site is configured for this host name")
	case v.cfg.AllowHTTP:
		x.name, x.v = v.cfg.ServerName, v
		next(x)
	default:
		x.name = v.cfg.ServerName
		target := "https://" + host
		if s.httpsPort != "443" {
			target += ":" + s.httpsPort
		}
		target += r.URL.RequestURI()
		v.ops.redirects.Add(1)
		http.Redirect(x.w, r, target, http.StatusPermanentRedirect)
	}
}

// routes maps host names to vhosts; it is replaced whole, never modified.
type routes struct {
	byName map[string]*vhost
	all    []*vhost
	cfg    *tenant.Config // the configuration these routes serve
	gen    uint64         // configuration generation: 1 at start, +1 per reload
	// problems are the errors of vhost files not applied, by file: kept
	// on their previous version, or not served at all.
	problems map[string][]string
}

// lookup returns the vhost for a canonical host name: an exact name, else
// a "*.parent" wildcard.
func (rt *routes) lookup(host string) *vhost {
	if v, ok := rt.byName[host]; ok {
		return v
	}
	if i := strings.IndexByte(host, '.'); i > 0 {
		return rt.byName["*"+host[i:]]
	}
	return nil
}

// canonicalHost lower-cases a Host header or SNI value and strips the port
// and a trailing dot.
func canonicalHost(h string) string {
	// Without a colon there is no port (and SplitHostPort's error would
	// be an allocation per request).
	if strings.IndexByte(h, ':') >= 0 {
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}
