// Package phpfpm runs each tenant's PHP in a php-fpm pool of its own and
// serves PHP scripts through it over FastCGI (package host/fastcgi).
//
// Every pool is a separate php-fpm master started through the
// sandbox.Spawner with all of the tenant's ids (real, effective, saved),
// no capabilities, no_new_privs, its own process group and (where the
// kernel allows it, sandbox.Containment) its own PID namespace, whose PID 1
// it is: no PHP process ever runs as root, one tenant's crash, restart or
// configuration change touches no other tenant, and nothing the pool
// started, a process a script detached included, outlives its master,
// which dies with hostd. hostd creates the pool's listening socket
// itself, in state_dir/php-fpm (mode 0700, root), and hands it to php-fpm
// as an inherited descriptor (FPM_SOCKETS, php-fpm's own mechanism for
// re-executing itself), so no tenant can connect to any pool's socket, not
// even its own; hostd dials it with its own identity. The pool file is
// written next to it and passed as a descriptor too. A pool starts on the
// first request (pm = ondemand: no worker until then), is restarted when
// its master dies, stops after [php] pool_idle without requests, and is
// stopped when its vhost is removed or rebuilt by a reload.
//
// Package host calls a Pool from the request path; this package knows
// nothing of TOML.
package phpfpm
