# login.rb (content phase, path = "/login"; also "/logout"): a signed-cookie
# login. POST /login with the form fields user and password sets the cookie
#   auth = user "." expiry "." nonce "." HMAC-SHA-256(secret, user.expiry.nonce)
# (Secure, HttpOnly, SameSite=Strict, one hour). members.rb checks it on
# /members/*. POST /logout expires it. The HMAC key is made once per
# server start with a random token; keep it in a file of an io_roots
# directory instead to keep logins across restarts.

# Users and the SHA-256 of their passwords (Hostd.sha256("wonderland")).
USERS = {
  "alice" => "a71a7c7011f53a1bab3642ec2ce12593f05230ace8de1e3e7645f69efac1443d",
}
COOKIE = {path: "/", secure: true, http_only: true, same_site: "Strict"}

def secret
  Hostd.shared.add("login:secret", Hostd.random_token(32)) # the first request makes it
  Hostd.shared.get("login:secret")
end

def page(status, msg)
  r.status = status
  r.headers_out["Content-Type"] = "text/html; charset=utf-8"
  r.write("<!doctype html><title>Login</title><p>", msg, "</p>",
    '<form method="post" action="/login"><input name="user"> <input name="password" type="password"> <button>Log in</button></form>')
end

if r.path == "/logout" && r.method == "POST"
  r.set_cookie(COOKIE.merge(name: "auth", value: "", max_age: 0))
  r.redirect("/login", 303)
end
return 404 if r.path != "/login"
return page(200, "Please log in.") if r.method != "POST"

form = r.post_args || {}
user, pass = form["user"], form["password"]
want = user.is_a?(String) ? USERS[user] : nil
# Compare digests in constant time, and do the work for unknown users too.
ok = pass.is_a?(String) && Hostd.constant_time_equal?(Hostd.sha256(pass), want || "0" * 64) && want
unless ok
  Hostd.log("warn", "failed login for #{user.inspect} from #{r.remote_addr}")
  return page(403, "Wrong user or password.")
end
payload = "#{user}.#{Hostd.time.to_i + 3600}.#{Hostd.random_token(16)}"
sig = Hostd.base64url_encode(Hostd.hmac("sha256", secret, payload))
r.set_cookie(COOKIE.merge(name: "auth", value: "#{payload}.#{sig}", max_age: 3600))
r.redirect("/members/", 303)
