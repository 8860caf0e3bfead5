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
}

func init() {
	for k, v := range rubySourcesB {
		rubySources[k] = v
	}
}
