-- items_api.lua (content phase, path = "/api/items*"): a small JSON API.
--   GET  /api/items      list the items
--   GET  /api/items/ID   one item
--   POST /api/items      add one, from a JSON body or a form
--                        (application/x-www-form-urlencoded or multipart)
-- Input is validated; errors answer 4xx with a JSON message. Items live in
-- the tenant's shared dictionary (in memory: a demo store).

local function reply(status, v)
  r.status = status
  r.headers_out["Content-Type"] = "application/json"
  r.headers_out["Cache-Control"] = "no-store"
  r:write(hostd.json_encode(v))
end

local function item(id)
  local s = hostd.shared:get("item:" .. id)
  return s and hostd.json_decode(s)
end

-- validate returns the clean item, or nil and a list of problems.
local function validate(input)
  local errors = {}
  local name = input.name
  if type(name) ~= "string" or not hostd.re.match(name, [[^[\p{L}\p{N} ._-]{1,64}$]]) then
    errors[#errors + 1] = "name: 1 to 64 letters, digits, spaces, dots, dashes or underscores"
  end
  local qty = tonumber(input.qty)
  if not qty or qty ~= math.floor(qty) or qty < 1 or qty > 1000 then
    errors[#errors + 1] = "qty: a whole number from 1 to 1000"
  end
  if #errors > 0 then
    return nil, errors
  end
  return { name = name, qty = qty }
end

local one = hostd.re.match(r.path, [[^/api/items/(\d{1,9})$]])
if r.method == "GET" and one then
  local it = item(one[1])
  if not it then
    return reply(404, { error = "no such item" })
  end
  return reply(200, it)
elseif r.method == "GET" and r.path == "/api/items" then
  local list = {}
  for _, k in ipairs(hostd.shared:get_keys(0)) do
    local id = hostd.re.match(k, [[^item:(\d+)$]])
    if id then
      list[#list + 1] = item(id[1])
    end
  end
  table.sort(list, function(a, b) return a.id < b.id end)
  return reply(200, { items = #list > 0 and list or hostd.json_empty_array })
elseif r.method == "POST" and r.path == "/api/items" then
  local ctype = (r.headers_in["Content-Type"] or ""):lower()
  local input
  if hostd.re.match(ctype, [[^application/json\b]]) then
    input = r:json_body()
  elseif hostd.re.match(ctype, [[^(application/x-www-form-urlencoded|multipart/form-data)\b]]) then
    input = r:post_args()
  else
    return reply(415, { error = "send application/json or a form" })
  end
  if type(input) ~= "table" then
    return reply(400, { error = "the body is not valid " .. (ctype:find("json", 1, true) and "JSON" or "form data") })
  end
  local it, errors = validate(input)
  if not it then
    return reply(422, { errors = errors })
  end
  it.id = hostd.shared:incr("items:next", 1)
  hostd.shared:set("item:" .. it.id, hostd.json_encode(it))
  r.headers_out["Location"] = "/api/items/" .. it.id
  return reply(201, it)
end
r.headers_out["Allow"] = "GET, POST"
return reply(405, { error = "method not allowed" })
