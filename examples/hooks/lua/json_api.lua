-- json_api.lua (content phase): a small JSON endpoint.
--   GET  /api/info        -> information about the request
--   POST /api/sum {"numbers": [1, 2, 3]} -> {"sum": 6}
local function reply(status, value)
  r.status = status
  r.headers_out["Content-Type"] = "application/json"
  r.headers_out["Cache-Control"] = "no-store"
  r:write(hostd.json_encode(value))
end

if r.method == "GET" and r.path == "/api/info" then
  return reply(200, {
    method = r.method,
    path = r.path,
    args = r.args,
    client = r.remote_addr,
    user_agent = r.headers_in["User-Agent"],
    time = math.floor(hostd.time()),
  })
end

if r.path == "/api/sum" then
  if r.method ~= "POST" then
    r.headers_out["Allow"] = "POST"
    return reply(405, {error = "use POST"})
  end
  local body, err = hostd.json_decode(r.body)
  if type(body) ~= "table" or type(body.numbers) ~= "table" then
    return reply(400, {error = "want a JSON object with a list \"numbers\""})
  end
  local sum = 0
  for _, n in ipairs(body.numbers) do
    if type(n) ~= "number" then
      return reply(400, {error = "numbers must be numbers"})
    end
    sum = sum + n
  end
  return reply(200, {sum = sum})
end

return reply(404, {error = "not found"})
