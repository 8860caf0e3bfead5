// Package outbound is the HTTP client behind hostd.http.request: one
// Client per vhost, with its own connection pool, that reaches only the
// destinations the vhost's outbound allowlist names. The allowlist is
// checked on the URL of the request and of every redirect, and again,
// after DNS resolution, on the address of every connection the client
// dials (net.Dialer.Control), so a name whose DNS the tenant controls
// cannot point the client at loopback, link-local (cloud metadata),
// private or other special addresses, nor at hostd's own session stores:
// those are reachable only through an address entry that names them.
package outbound
