// Command hostd is a multi-tenant HTTPS web host: one process serves many
// tenants' sites, running each tenant's static files, CGI and Lua/mruby
// hooks with that tenant's uid/gid on per-thread credentials. This package
// is the CLI only (serve, check, reload, status, trace, bench, gen-vhosts,
// version); see README.md.
package main
