r.headers_out["X-A"] = r.method .. r.path
r.vars.x = {1, 2}
r:write(r.uri, tostring(r.args.none), r.headers_in["Host"] or "-")
