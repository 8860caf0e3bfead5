# basic_auth.rb (access phase): HTTP Basic authentication against a table
# of users with SHA-256 password hashes (Hostd.sha256 is hex).
# Generate a hash with: printf %s 'password' | sha256sum
USERS = {
  # alice / wonderland
  "alice" => "a71a7c7011f53a1bab3642ec2ce12593f05230ace8de1e3e7645f69efac1443d",
  # bob / builder
  "bob" => "df6b07176a9b17cc4c9afc257bd404732e7d09b76436c7890f7b7be14e579794",
}

# Compare HMACs so that the time taken does not depend on where the
# strings differ.
def constant_time_equal(a, b)
  key = "basic-auth-compare"
  Hostd.hmac_sha256(key, a) == Hostd.hmac_sha256(key, b)
end

user, pass = r.basic_auth
if user && USERS[user] && constant_time_equal(USERS[user], Hostd.sha256(pass))
  r.vars["user"] = user # later phases (and the log hook) can read it
  return
end

r.headers_out["WWW-Authenticate"] = 'Basic realm="members", charset="UTF-8"'
return 401
