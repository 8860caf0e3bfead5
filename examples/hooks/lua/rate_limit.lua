-- rate_limit.lua (access phase): at most LIMIT requests per client IP per
-- WINDOW seconds, counted in the tenant's shared dictionary (shared by all
-- of the tenant's workers).
local LIMIT = 60
local WINDOW = 60

local now = hostd.time()
local window = math.floor(now / WINDOW)
local key = "rl:" .. r.remote_addr .. ":" .. window

-- incr(key, delta, init, ttl): a new key starts at init and expires
-- after ttl seconds, so old windows clean themselves up.
local count, err = hostd.shared:incr(key, 1, 0, WINDOW)
if not count then
  hostd.log("error", "rate limit: " .. err)
  return -- fail open
end

r.headers_out["X-RateLimit-Limit"] = LIMIT
r.headers_out["X-RateLimit-Remaining"] = math.max(LIMIT - count, 0)
if count > LIMIT then
  r.headers_out["Retry-After"] = math.ceil((window + 1) * WINDOW - now)
  return 429
end
