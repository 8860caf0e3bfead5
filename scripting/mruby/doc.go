// Package mruby runs .rb hooks with mruby 3.1 through a small cgo binding
// (hostd_mruby.c) against build/mruby/lib/libmruby.a, built by
// `make libmruby` (mk/mruby.mk) with hostd's patch series (build/patches:
// memory-safety fixes ported from upstream, linear string search, a compile
// time limit) and the defines listed in build/build_config.rb. An Engine serves one tenant from a bounded pool of
// mrb_states, its own (New) or shared by many tenants (Pool.Engine), each
// used by one goroutine at a time; a hook is compiled once per version into
// bytecode that any VM loads; every run gets a fresh
// anonymous top-level class and self, globals are reset after it, and the
// core classes are frozen so no run can change what the next one sees.
// The parts of the hook API written in Ruby (Regexp over Go's regexp,
// MatchData, the String methods that take a Regexp, r.cookies ...) are in
// prelude.rb, run once per VM before the freeze; they reach Go through one
// generic call, Hostd.__fn (api.go).
// Under the nomruby build tag (or without cgo) New returns an engine whose
// methods fail with scripting.ErrNotSupported. See docs/mruby.md.
package mruby
