-- members.lua (access phase, path = "/members/*"): let a request through
-- only with a valid auth cookie from login.lua; r.vars.user names the user
-- for the content and log phases. Anything else goes to the login page.

local function login()
  return r:redirect("/login", 303)
end

local c = r.cookies.auth
if not c then return login() end
local m = hostd.re.match(c, [[^([a-z0-9_]{1,32})\.(\d{1,12})\.([A-Za-z0-9_-]{1,64})\.([A-Za-z0-9_-]{43})$]])
if not m then return login() end
local secret = hostd.shared:get("login:secret")
if not secret or tonumber(m[2]) <= hostd.time() then return login() end
local want = hostd.base64url_encode(hostd.hmac("sha256", secret, m[1] .. "." .. m[2] .. "." .. m[3]))
if not hostd.constant_time_equal(m[4], want) then
  hostd.log("warn", "forged auth cookie from " .. r.remote_addr)
  return login()
end
r.vars.user = m[1]
