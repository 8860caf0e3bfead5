# rate_limit.rb (access phase): at most LIMIT requests per client IP per
# WINDOW seconds, counted in the tenant's shared dictionary (shared by all
# of the tenant's workers).
LIMIT = 60
WINDOW = 60

now = Hostd.time
window = (now / WINDOW).floor
key = "rl:#{r.remote_addr}:#{window}"

# incr(key, delta, init, ttl): a new key starts at init and expires after
# ttl seconds, so old windows clean themselves up.
count = Hostd.shared.incr(key, 1, 0, WINDOW)
if count.nil?
  Hostd.log("error", "rate limit: shared dictionary full")
  return # fail open
end

r.headers_out["X-RateLimit-Limit"] = LIMIT
r.headers_out["X-RateLimit-Remaining"] = [LIMIT - count, 0].max
if count > LIMIT
  r.headers_out["Retry-After"] = ((window + 1) * WINDOW - now).ceil
  return 429
end
