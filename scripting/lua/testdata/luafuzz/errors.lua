local ok, err = pcall(error, {code = 1})
local ok2, err2 = xpcall(function() local x = nil; return x.y end, function(e) return "h:" .. e end)
r:write(tostring(ok), type(err), err2)
error("done")
