local d = hostd.shared
d:set("k", "v", 0.5)
d:incr("n", 1)
r:write(tostring(d:get("k")), tostring(d:get("n")))
for i = 1, 300 do d:set("big" .. i, string.rep("x", 65536)) end
