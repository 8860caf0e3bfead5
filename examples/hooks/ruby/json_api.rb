# json_api.rb (content phase): a small JSON endpoint.
#   GET  /api/info                          -> information about the request
#   POST /api/sum {"numbers": [1, 2, 3]}    -> {"sum": 6}
def reply(status, value)
  r.status = status
  r.headers_out["Content-Type"] = "application/json"
  r.headers_out["Cache-Control"] = "no-store"
  r.write(Hostd.json_encode(value))
end

if r.method == "GET" && r.path == "/api/info"
  reply(200, {
    "method" => r.method,
    "path" => r.path,
    "args" => r.args,
    "client" => r.remote_addr,
    "user_agent" => r.headers_in["User-Agent"],
    "time" => Hostd.time.floor,
  })
  return
end

if r.path == "/api/sum"
  if r.method != "POST"
    r.headers_out["Allow"] = "POST"
    reply(405, {"error" => "use POST"})
    return
  end
  body = Hostd.json_decode(r.body)
  unless body.is_a?(Hash) && body["numbers"].is_a?(Array)
    reply(400, {"error" => "want a JSON object with a list \"numbers\""})
    return
  end
  unless body["numbers"].all? { |n| n.is_a?(Numeric) }
    reply(400, {"error" => "numbers must be numbers"})
    return
  end
  reply(200, {"sum" => body["numbers"].inject(0) { |s, n| s + n }})
  return
end

reply(404, {"error" => "not found"})
