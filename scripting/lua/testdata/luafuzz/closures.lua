local fs = {}
for i = 1, 100 do fs[i] = function() return i end end
local sum = 0 for _, f in ipairs(fs) do sum = sum + f() end
r:write(sum)
