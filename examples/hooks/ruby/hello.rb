# hello.rb (content phase): the smallest content hook. The benchmarks
# compare its response byte for byte with a native Go handler.
r.headers_out["Content-Type"] = "text/plain"
r.write("Hello, world!\n")
