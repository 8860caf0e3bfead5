-- redirect.lua (rewrite phase): send plain-HTTP clients to HTTPS and
-- moved pages to their new place. r:redirect ends the request.

-- Old path prefix -> new prefix.
local moved = {
  ["/blog/"] = "/articles/",
  ["/docs/v1/"] = "/docs/",
}

if r.scheme == "http" then
  r:redirect("https://" .. r.host .. r.uri, 301)
end

for old, new in pairs(moved) do
  if r.path:sub(1, #old) == old then
    local target = new .. r.path:sub(#old + 1)
    if r.query_string ~= "" then
      target = target .. "?" .. r.query_string
    end
    r:redirect(target, 301)
  end
end
-- Returning nothing: the request goes on to the next phase.
