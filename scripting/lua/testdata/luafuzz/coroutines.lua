local gen = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i) end end)
r:write(gen(), gen(), gen())
local co = coroutine.create(function(a) local t = {} while true do t[#t + 1] = a a = coroutine.yield(#t) end end)
for i = 1, 1000 do coroutine.resume(co, i) end
