//go:build cgo && !nomruby

package mruby

// rubySourcesB are the Ruby versions of the cases of issue 16 part B
// (scriptingtest's casesB), merged into rubySources.
var rubySourcesB = map[string]string{
	"http_get": `res = Hostd::HTTP.request(url: r.headers_in["X-Base"] + "/ok", headers: {"X-In" => "v"})
r.write(res.status, " ", res.body, " ", res.headers["x-echo"], " ", res.headers["x-multi"][1])`,
	"http_post": `res = Hostd::HTTP.request(method: "post", url: r.headers_in["X-Base"] + "/echo",
  headers: {"Content-Type" => "application/json"}, body: '{"a":1}', timeout: 5)
r.write(res.status, " ", res.body)`,
	"http_max_body": `begin
  Hostd::HTTP.request(url: r.headers_in["X-Base"] + "/ok", max_body: 3)
rescue Hostd::Error => e
  r.write("nil ", e.message.sub("Hostd::HTTP.request: ", ""))
end`,
	"http_timeout": `begin
  Hostd::HTTP.request(url: r.headers_in["X-Base"] + "/slow", timeout: 0.2)
rescue Hostd::Error => e
  r.write("nil ", e.message)
end`,
	// The run's own deadline passes inside the request: a time-out that
	// no rescue stops.
	"http_run_deadline": "begin\n  Hostd::HTTP.request(url: r.headers_in[\"X-Base\"] + \"/slow\")\nrescue Exception\nend\nr.write(\"not reached\")",
	"http_refused_redis": `out = []
["http://127.0.0.1:6379/", r.headers_in["X-Redis"]].each do |u|
  begin
    Hostd::HTTP.request(url: u)
  rescue Hostd::Error => e
    out << "nil " + e.message.sub("Hostd::HTTP.request: ", "")
  end
end
r.write(out.join("|"))`,
	"http_refused_metadata_dns": `begin
  Hostd::HTTP.request(url: "http://meta.test/latest/meta-data/")
rescue Hostd::Error => e
  r.write("nil ", e.message.include?("169.254.169.254:80: outbound: destination not allowed").to_s)
end`,
	"http_refused_by_address": `out = []
["http://169.254.169.254/latest/meta-data/", r.headers_in["X-Redis"], "http://redis.test:6379/"].each do |u|
  begin
    Hostd::HTTP.request(url: u)
    out << "false"
  rescue Hostd::Error => e
    out << e.message.include?("destination not allowed").to_s
  end
end
r.write(out.join(" "))`,
	"http_refused_redirect": `out = []
[r.headers_in["X-Redis"], "http://169.254.169.254/"].each do |u|
  begin
    Hostd::HTTP.request(url: r.headers_in["X-Base"] + "/to?u=" + u)
  rescue Hostd::Error => e
    out << "nil " + e.message.include?("destination not allowed").to_s
  end
end
r.write(out.join(" "))`,
	"http_bad_args":    "x = 1\nHostd::HTTP.request(url: 1)",
	"http_unknown_key": "Hostd::HTTP.request(url: 'http://127.0.0.2/', proxy: 'x')",
	"http_not_enabled": "begin\n  Hostd::HTTP.request(url: \"https://api.example.com/\")\nrescue Hostd::Error => e\n  r.write(\"nil \", e.message.sub(\"Hostd::HTTP.request: \", \"\"))\nend",
	"shared_add_replace": `d = Hostd.shared
a1 = d.add("new", "v1")
a2 = d.add("new", "v2")
r1 = d.replace("missing", 1)
r2 = d.replace("have", 5, 60)
r.write(a1, " ", a2, " exists ", r1, " not found ", r2)`,
	"shared_add_nil": "x = 1\nHostd.shared.add(\"k\", nil)",
	"shared_ttl_expire": `d = Hostd.shared
d.set("k", "v", 30)
t1 = d.ttl("k")
t2 = d.ttl("forever")
t3 = d.ttl("none")
x1 = d.expire("forever", 100)
x2 = d.expire("none", 1)
d.expire("k", 0)
r.write(t1.ceil, " ", t2, " ", t3.inspect, " not found ", x1, " ", d.ttl("forever").ceil, " ", x2, " not found ", d.ttl("k"))`,
	"shared_expire_gone": `d = Hostd.shared
d.set("k", "v")
d.expire("k", 0.05)
t0 = Hostd.time
while Hostd.time < t0 + 0.1 do end
r.write(d.get("k").inspect, " ", d.ttl("k").inspect)`,
	"shared_get_keys": `d = Hostd.shared
r.write(d.get_keys(0).join(","), " ", d.get_keys(2).join(","), " ", d.get_keys.size)`,
	"shared_incr_init_ttl": `d = Hostd.shared
a = d.incr("n", 5, 100, 60)
b = d.incr("n", 1, 100, 1)
r.write(a, " ", b, " ", d.ttl("n").ceil)`,
	"shared_cas": `d = Hostd.shared
ok1 = d.cas("v", "a", "ab")
ok2 = d.cas("v", "a", "ac")
ok3 = d.set_if("n", 1, 2)
ok4 = d.cas("absent", nil, "now")
ok5 = d.cas("absent", nil, "again")
ok6 = d.cas("n", 2, nil)
r.write(ok1, " ", ok2, " changed ", ok3, " ", ok4, " ", ok5, " ", ok6)`,
	"file_read": `r.write(File.read(r.headers_in["X-Data-File"]))`,
	"file_exist": `df = r.headers_in["X-Data-File"]
r.write(File.exist?(df), " ", File.exist?(df + ".none"), " ", File.exist?("/etc/passwd"))`,
	"file_write_read_lines": `p = r.headers_in["X-Data-File"][0..-9] + "new.txt"
File.open(p, "w") { |f| f.write("a\n", "b\n") }
f = File.open(p, "a")
f << "c\n"
f.close
out = []
File.open(p) { |f| f.each_line { |l| out << l.chomp } }
r.write(out.join(","))`,
	"file_outside_roots": `begin
  File.read("/etc/passwd")
rescue Hostd::Error => e
  r.write("nil ", e.message)
end`,
	"file_too_many_open": `fs = []
err = nil
17.times do
  begin
    fs << File.open(r.headers_in["X-Data-File"])
  rescue Hostd::Error => e
    err = e
    break
  end
end
r.write(fs.size, " ", err.message.include?("too many open files"))`,
	"dir_children": `dir = r.headers_in["X-Data-File"][0..-10]
File.write(dir + "/z.txt", "z")
begin
  Dir.children("/etc")
rescue Hostd::Error => e
  err = e.message
end
r.write(Dir.children(dir).join(","), "|", err.include?("outside") ? "" : err)`,
	// The shared io cases, with hostd's File (files.go).
	"io_read_file": `File.open(r.headers_in["X-Data-File"]) do |f|
  first = f.gets.chomp
  rest = f.read
  r.write(first, "|", rest)
end`,
	"io_open_missing": `begin
  File.open("/nonexistent/hostd-test", "r")
rescue Hostd::Error => e
  r.write("nil ", e.message.class.to_s.downcase)
end`,
	"io_outside_roots": `out = ["/etc/passwd", "/proc/self/maps", "/proc/self/task/1/comm", "../x"].map do |p|
  begin
    File.open(p, "r")
    "opened " + p
  rescue Hostd::Error => e
    "nil " + e.message
  end
end
begin
  File.read("/etc/hostname")
rescue Hostd::Error => e
  out << "false " + e.message.include?("/etc/hostname: path is outside the tenant's allowed directories").to_s
end
r.write(out.join("\n"))`,
}

func init() {
	for k, v := range rubySourcesB {
		rubySources[k] = v
	}
}
