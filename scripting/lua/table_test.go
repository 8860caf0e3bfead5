package lua

import (
	"fmt"
	"testing"

	glua "github.com/yuin/gopher-lua"
)

// TestTableSmallHash checks the patched gopher-lua's tables that keep up
// to 8 hash keys without maps (third_party/README.md): lookups, updates,
// deletes, pairs/next order, and the move to the maps at the 9th key, for
// every kind of key, against what the same operations must give.
func TestTableSmallHash(t *testing.T) {
	L := glua.NewState()
	defer L.Close()
	for n := 0; n <= 20; n++ {
		src := fmt.Sprintf(`
local n = %d
local keys = {}
local kinds = {function(i) return "k"..i end, function(i) return -i end,
	function(i) return i + 0.5 end, function(i) return i %% 2 == 0 end, function(i) return {} end}
local t = {10, 20}
for i = 1, n do
	local k = kinds[i %% #kinds + 1](i)
	if type(k) == "boolean" then k = "b"..i end
	keys[i] = k
	t[k] = i
end
t[0] = "zero"
-- every key reads back, rawget too
for i = 1, n do
	assert(t[keys[i]] == i, "get "..i)
	assert(rawget(t, keys[i]) == i, "rawget "..i)
end
assert(t[0] == "zero" and t[1] == 10 and t[2] == 20 and #t == 2)
assert(t.missing == nil and t[-1000] == nil and t[1.25] == nil)
-- pairs: the array first, then the hash keys in insertion order
local seen, order = 0, {}
for k, v in pairs(t) do
	seen = seen + 1
	order[#order + 1] = k
end
assert(seen == n + 3, "pairs saw "..seen)
assert(order[1] == 1 and order[2] == 2)
if n <= 7 then
	for i = 1, n do assert(order[i + 2] == keys[i], "order "..i) end
	assert(order[n + 3] == 0)
end
-- update and delete while iterating (allowed for existing fields)
for k, v in pairs(t) do
	if type(v) == "number" and v %% 3 == 0 and k ~= 1 and k ~= 2 then t[k] = nil
	elseif type(v) == "number" and k ~= 1 and k ~= 2 then t[k] = v * 100 end
end
local left = 0
for i = 1, n do
	local v = t[keys[i]]
	if i %% 3 == 0 then assert(v == nil, "deleted "..i) else assert(v == i * 100, "updated "..i); left = left + 1 end
end
local cnt = 0
for k, v in pairs(t) do cnt = cnt + 1 end
assert(cnt == left + 3, "after delete pairs saw "..cnt)
-- a deleted key comes back
if n >= 3 then t[keys[3]] = "back"; assert(t[keys[3]] == "back") end
-- next from each key reaches the end
local k, steps = nil, 0
repeat k = next(t, k); steps = steps + 1 until k == nil or steps > 100
assert(steps <= 100)
`, n)
		if err := L.DoString(src); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
	}
	// Go's side: ForEach and RawGet over a table in each mode.
	for _, n := range []int{3, 8, 9} {
		tb := L.NewTable()
		for i := range n {
			tb.RawSetString(fmt.Sprintf("k%d", i), glua.LNumber(i))
		}
		tb.RawSetH(glua.LBool(true), glua.LString("t"))
		got := 0
		tb.ForEach(func(k, v glua.LValue) { got++ })
		if got != n+1 {
			t.Errorf("n=%d: ForEach saw %d keys, want %d", n, got, n+1)
		}
		if v := tb.RawGetString("k2"); v != glua.LNumber(2) {
			t.Errorf("n=%d: k2 = %v", n, v)
		}
		if v := tb.RawGet(glua.LBool(true)); v != glua.LString("t") {
			t.Errorf("n=%d: [true] = %v", n, v)
		}
		tb.RawSetString("k1", glua.LNil)
		if v := tb.RawGetH(glua.LString("k1")); v != glua.LNil {
			t.Errorf("n=%d: deleted k1 = %v", n, v)
		}
	}
}
