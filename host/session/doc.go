// Package session implements r.session for hooks: a Session (lazy load,
// dirty tracking, regenerate/destroy, a size limit on its JSON encoding)
// over a Store (memory, Redis or memcached) whose keys are namespaced per
// vhost, so one tenant can never load another's session, even on a shared
// server and with the other's cookie. It knows nothing of HTTP routing;
// host gives it the cookie and a way to set one. Network I/O runs on the
// caller's goroutine; the Redis and memcached clients keep connection pools
// (go-redis may run its own goroutines for them), which only do network
// I/O and never touch files.
package session
