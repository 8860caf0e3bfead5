// Package lua is hostd's Lua hook engine: it runs tenant hook scripts with
// gopher-lua in a sandbox (a whitelisted standard library behind read-only
// proxies, a fresh global environment per request) against the hook API
// of package scripting. One Engine serves one tenant, on VMs of its own
// (New) or on a Pool shared by many tenants (Pool.Engine): a VM is bound
// to a tenant for one run only, and nothing of a run stays in it.
package lua
