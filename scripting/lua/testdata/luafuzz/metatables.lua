local mt = {__index = function(t, k) return k .. k end, __concat = function(a, b) return "c" end}
local o = setmetatable({}, mt)
r:write(o.ab, o .. "x", tostring(rawequal))
