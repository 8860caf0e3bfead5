# redirect.rb (rewrite phase): send plain-HTTP clients to HTTPS and moved
# pages to their new place. r.redirect ends the request.

# Old path prefix => new prefix.
MOVED = {
  "/blog/" => "/articles/",
  "/docs/v1/" => "/docs/",
}

r.redirect("https://#{r.host}#{r.uri}", 301) if r.scheme == "http"

MOVED.each do |old, new|
  next unless r.path.start_with?(old)
  target = new + r.path[old.size..-1]
  target += "?" + r.query_string unless r.query_string.empty?
  r.redirect(target, 301)
end
# Falling off the end (or `return`): the request goes on to the next phase.
