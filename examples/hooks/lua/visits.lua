-- visits.lua (content phase): count a visitor's requests in their session.
-- With [sessions] store = "redis" (examples/hostd.toml) the count survives
-- a restart of hostd and is shared by every hostd node using that Redis.
local n = (r.session:get("visits") or 0) + 1
r.session:set("visits", n) -- before the first write: it sets the cookie
r.headers_out["Content-Type"] = "text/plain"
r:write("visits in this session: " .. n .. "\n")
