# items_api.rb (content phase, path = "/api/items*"): a small JSON API.
#   GET  /api/items      list the items
#   GET  /api/items/ID   one item
#   POST /api/items      add one, from a JSON body or a form
#                        (application/x-www-form-urlencoded or multipart)
# Input is validated; errors answer 4xx with a JSON message. Items live in
# the tenant's shared dictionary (in memory: a demo store).

def reply(status, v)
  r.status = status
  r.headers_out["Content-Type"] = "application/json"
  r.headers_out["Cache-Control"] = "no-store"
  r.write(Hostd.json_encode(v))
end

def item(id)
  s = Hostd.shared.get("item:#{id}")
  s && Hostd.json_decode(s)
end

# validate returns the clean item and a list of problems.
def validate(input)
  errors = []
  name = input["name"]
  unless name.is_a?(String) && name.match?(/\A[\p{L}\p{N} ._-]{1,64}\z/)
    errors << "name: 1 to 64 letters, digits, spaces, dots, dashes or underscores"
  end
  qty = input["qty"]
  qty = qty.to_i if qty.is_a?(String) && qty.match?(/\A\d{1,4}\z/)
  errors << "qty: a whole number from 1 to 1000" unless qty.is_a?(Integer) && qty.between?(1, 1000)
  [{"name" => name, "qty" => qty}, errors]
end

one = r.path.match(/\A\/api\/items\/(\d{1,9})\z/)
if r.method == "GET" && one
  it = item(one[1])
  return reply(404, {"error" => "no such item"}) unless it
  return reply(200, it)
elsif r.method == "GET" && r.path == "/api/items"
  ids = Hostd.shared.get_keys(0).map { |k| k.match(/\Aitem:(\d+)\z/) }.compact.map { |m| m[1] }
  return reply(200, {"items" => ids.map { |id| item(id) }.compact.sort_by { |i| i["id"] }})
elsif r.method == "POST" && r.path == "/api/items"
  ctype = (r.headers_in["Content-Type"] || "").downcase
  if ctype.match?(/\Aapplication\/json\b/)
    input = r.json_body
  elsif ctype.match?(/\A(application\/x-www-form-urlencoded|multipart\/form-data)\b/)
    input = r.post_args
  else
    return reply(415, {"error" => "send application/json or a form"})
  end
  unless input.is_a?(Hash)
    return reply(400, {"error" => "the body is not valid " + (ctype.include?("json") ? "JSON" : "form data")})
  end
  it, errors = validate(input)
  return reply(422, {"errors" => errors}) unless errors.empty?
  it["id"] = Hostd.shared.incr("items:next", 1)
  Hostd.shared.set("item:#{it["id"]}", Hostd.json_encode(it))
  r.headers_out["Location"] = "/api/items/#{it["id"]}"
  return reply(201, it)
end
r.headers_out["Allow"] = "GET, POST"
reply(405, {"error" => "method not allowed"})
