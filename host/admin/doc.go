// Package admin is hostd's operator interface: the admin socket
// (state_dir/admin.sock, 0600) with its line protocol and the Client
// `hostd status`, `reload`, `reopen-logs` and `trace` use; the admin
// listener's routes (metrics, status page, status.json, pprof); and the
// JSON vocabulary both speak (Status, ReloadResult). The server is behind
// the small Backend interface, which *host.Server implements; what needs
// the server's internals (its counters, the tracer, the Prometheus
// collectors, the bearer token) stays in host.
package admin
