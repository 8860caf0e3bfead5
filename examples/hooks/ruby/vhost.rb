# vhost.rb (rewrite phase): serve several host names from one document
# root, each from its own subdirectory, like a virtual-host rewrite:
# blog.example.com/post.html -> /sites/blog/post.html
SITES = {
  "blog.example.com" => "blog",
  "shop.example.com" => "shop",
  "www.example.com" => "www",
  "example.com" => "www",
}

# Host may carry a port; it is case-insensitive.
host = r.host.downcase.split(":").first
site = SITES[host]
return 404 unless site

# r.set_path rewrites internally; the client's URL does not change. The
# query is kept unless the new path has its own "?...".
r.set_path("/sites/#{site}#{r.path}")
r.vars["site"] = site
