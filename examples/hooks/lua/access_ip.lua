-- access_ip.lua (access phase): allow only clients from some networks.
-- r.remote_addr is the client's IP address without the port.

-- Allowed address prefixes: whole addresses or network prefixes ending
-- in "." (IPv4) or ":" (IPv6).
local allowed = {
  "127.0.0.1",
  "::1",
  "10.",
  "192.168.",
  "2001:db8:",
}

local ip = r.remote_addr
for _, prefix in ipairs(allowed) do
  local last = prefix:sub(-1)
  if ip == prefix or ((last == "." or last == ":") and ip:sub(1, #prefix) == prefix) then
    return -- allowed: continue with the next phase
  end
end

hostd.log("warn", "access denied for " .. ip)
return 403
