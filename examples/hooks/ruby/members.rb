# members.rb (access phase, path = "/members/*"): let a request through
# only with a valid auth cookie from login.rb; r.vars["user"] names the user
# for the content and log phases. Anything else goes to the login page.

def login
  r.redirect("/login", 303)
end

c = r.cookies["auth"]
login unless c
m = c.match(/\A([a-z0-9_]{1,32})\.(\d{1,12})\.([A-Za-z0-9_-]{1,64})\.([A-Za-z0-9_-]{43})\z/)
login unless m
secret = Hostd.shared.get("login:secret")
login if secret.nil? || m[2].to_i <= Hostd.time
want = Hostd.base64url_encode(Hostd.hmac("sha256", secret, "#{m[1]}.#{m[2]}.#{m[3]}"))
unless Hostd.constant_time_equal?(m[4], want)
  Hostd.log("warn", "forged auth cookie from #{r.remote_addr}")
  login
end
r.vars["user"] = m[1]
