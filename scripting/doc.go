// Package scripting defines the hook API that tenant scripts see and the
// pieces every script engine shares: the request interface that host
// implements, hook phases, results, script errors, the per-tenant shared
// dictionary, JSON conversion, and the engine-neutral parts of the hook
// API: bounded, cached regular expressions (RE2), URL escaping and form
// bodies, cookies, digests, random tokens and HTTP dates. The engines live in subpackages
// (scripting/lua, scripting/mruby) and know nothing of HTTP or TOML.
package scripting
