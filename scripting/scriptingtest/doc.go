// Package scriptingtest helps test hook engines: a fake scripting.Request
// that records what a hook does, and a table of cases with a runner that
// both the Lua and the mruby engine run, each with its own sources keyed
// by case name, so the two languages keep the same hook API.
package scriptingtest
