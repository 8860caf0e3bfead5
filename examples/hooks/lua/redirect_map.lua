-- redirect_map.lua (rewrite phase): redirects from a map file the tenant
-- edits without touching the hook. Each line of the file is
--   PATTERN  TARGET  [STATUS]
-- PATTERN a regular expression (RE2 syntax) matched against the path,
-- TARGET with $1, ${name} for its groups, STATUS 301 (default), 302, 307
-- or 308; blank lines and lines starting with # are ignored. The first
-- matching line wins; the query string is kept. Example:
--   ^/blog/(\d{4})/(?P<slug>[a-z0-9-]+)\.html$   /articles/$1/${slug}   301
--   ^/old-shop(/.*)?$                            https://shop.example.com$1   302
--
-- MAP is an absolute path in a directory of the vhost's io_roots (relative
-- paths resolve against the document root, which would also serve it).
local MAP = "/srv/www/alice/data/redirects.txt"

local lineno = 0
for line in io.lines(MAP) do
  lineno = lineno + 1
  if not hostd.re.match(line, [[^\s*(#|$)]]) then
    local rule = hostd.re.match(line, [[^\s*(\S+)\s+(\S+)(?:\s+(30[1278]))?\s*$]])
    if not rule then
      hostd.log("warn", MAP .. ":" .. lineno .. ": want PATTERN TARGET [STATUS]")
    else
      local ok, m = pcall(hostd.re.match, r.path, rule[1])
      if not ok then
        hostd.log("warn", MAP .. ":" .. lineno .. ": " .. tostring(m))
      elseif m then
        -- $1 and ${name} in the target: the match's groups.
        local target = hostd.re.gsub(rule[2], [[\$(?:(\d)|\{(\w+)\})]], function(ref)
          return m[tonumber(ref[1]) or ref[2]] or ""
        end)
        if r.query_string ~= "" then
          target = target .. (target:find("?", 1, true) and "&" or "?") .. r.query_string
        end
        return r:redirect(target, tonumber(rule[3]) or 301)
      end
    end
  end
end
