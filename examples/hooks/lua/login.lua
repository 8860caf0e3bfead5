-- login.lua (content phase, path = "/login"; also "/logout"): a signed-cookie
-- login. POST /login with the form fields user and password sets the cookie
--   auth = user "." expiry "." nonce "." HMAC-SHA-256(secret, user.expiry.nonce)
-- (Secure, HttpOnly, SameSite=Strict, one hour). members.lua checks it on
-- /members/*. POST /logout expires it. The HMAC key is made once per
-- server start with a random token; keep it in a file of an io_roots
-- directory instead to keep logins across restarts.

-- Users and the SHA-256 of their passwords (hostd.sha256("wonderland")).
local users = {
  alice = "a71a7c7011f53a1bab3642ec2ce12593f05230ace8de1e3e7645f69efac1443d",
}

local function secret()
  hostd.shared:add("login:secret", hostd.random_token(32)) -- the first request makes it
  return hostd.shared:get("login:secret")
end

local function page(status, msg)
  r.status = status
  r.headers_out["Content-Type"] = "text/html; charset=utf-8"
  r:write("<!doctype html><title>Login</title><p>", msg, "</p>",
    '<form method="post" action="/login"><input name="user"> <input name="password" type="password"> <button>Log in</button></form>')
end

if r.path == "/logout" and r.method == "POST" then
  r:set_cookie{ name = "auth", value = "", path = "/", max_age = 0, secure = true, http_only = true, same_site = "Strict" }
  return r:redirect("/login", 303)
elseif r.path ~= "/login" then
  return 404
end
if r.method ~= "POST" then
  return page(200, "Please log in.")
end
local form = r:post_args()
local user, pass = form and form.user, form and form.password
local want = type(user) == "string" and users[user]
-- Compare digests in constant time, and do the work for unknown users too.
local ok = type(pass) == "string" and hostd.constant_time_equal(hostd.sha256(pass), want or string.rep("0", 64)) and want
if not ok then
  hostd.log("warn", "failed login for " .. tostring(user) .. " from " .. r.remote_addr)
  return page(403, "Wrong user or password.")
end
local payload = user .. "." .. (math.floor(hostd.time()) + 3600) .. "." .. hostd.random_token(16)
local sig = hostd.base64url_encode(hostd.hmac("sha256", secret(), payload))
r:set_cookie{ name = "auth", value = payload .. "." .. sig, path = "/", max_age = 3600,
  secure = true, http_only = true, same_site = "Strict" }
return r:redirect("/members/", 303)
