# redirect_map.rb (rewrite phase): redirects from a map file the tenant
# edits without touching the hook. Each line of the file is
#   PATTERN  TARGET  [STATUS]
# PATTERN a regular expression (RE2 syntax) matched against the path,
# TARGET with $1, ${name} for its groups, STATUS 301 (default), 302, 307
# or 308; blank lines and lines starting with # are ignored. The first
# matching line wins; the query string is kept. Example:
#   ^/blog/(\d{4})/(?P<slug>[a-z0-9-]+)\.html$   /articles/$1/${slug}   301
#   ^/old-shop(/.*)?$                            https://shop.example.com$1   302
#
# MAP is an absolute path in a directory of the vhost's io_roots (relative
# paths resolve against the document root, which would also serve it).
MAP = "/srv/www/alice/data/redirects.txt"

File.open(MAP) do |f|
  f.each_line.with_index(1) do |line, lineno|
    next if line.match?(/\A\s*(#|$)/)
    rule = line.match(/\A\s*(\S+)\s+(\S+)(?:\s+(30[1278]))?\s*\z/)
    unless rule
      Hostd.log("warn", "#{MAP}:#{lineno}: want PATTERN TARGET [STATUS]")
      next
    end
    begin
      m = Regexp.new(rule[1]).match(r.path)
    rescue => e
      Hostd.log("warn", "#{MAP}:#{lineno}: #{e.message}")
      next
    end
    next unless m
    # $1 and ${name} in the target: the match's groups.
    target = rule[2].gsub(/\$(\d|\{\w+\})/) do |ref|
      g = ref[1..-1].delete("{}")
      m[g.match?(/\A\d\z/) ? g.to_i : g].to_s
    end
    target += (target.include?("?") ? "&" : "?") + r.query_string unless r.query_string.empty?
    r.redirect(target, (rule[3] || 301).to_i)
  end
end
