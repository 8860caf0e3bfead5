# visits.rb (content phase): count a visitor's requests in their session.
n = (r.session.get("visits") || 0) + 1
r.session.set("visits", n) # before the first write: it sets the cookie
r.headers_out["Content-Type"] = "text/plain"
r.write("visits in this session: #{n}\n")
