// Package lua is hostd's Lua hook engine: it runs tenant hook scripts with
// gopher-lua in a sandbox (a whitelisted standard library behind read-only
// proxies, a fresh global environment per request) against the hook API
// of package scripting. One Engine serves one tenant; its VMs are pooled
// and never shared with another tenant.
package lua
