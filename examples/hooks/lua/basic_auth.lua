-- basic_auth.lua (access phase): HTTP Basic authentication against a
-- table of users with SHA-256 password hashes (hostd.sha256 is hex).
-- Generate a hash with: printf %s 'password' | sha256sum
local users = {
  -- alice / wonderland
  alice = "a71a7c7011f53a1bab3642ec2ce12593f05230ace8de1e3e7645f69efac1443d",
  -- bob / builder
  bob = "df6b07176a9b17cc4c9afc257bd404732e7d09b76436c7890f7b7be14e579794",
}

local function constant_time_equal(a, b)
  -- Compare HMACs so that the time taken does not depend on where the
  -- strings differ.
  local key = "basic-auth-compare"
  return hostd.hmac_sha256(key, a) == hostd.hmac_sha256(key, b)
end

local user, pass = r:basic_auth()
if user and users[user] and constant_time_equal(users[user], hostd.sha256(pass)) then
  r.vars.user = user -- later phases (and the log hook) can read it
  return
end

r.headers_out["WWW-Authenticate"] = 'Basic realm="members", charset="UTF-8"'
return 401
