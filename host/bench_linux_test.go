package host_test

import (
	"io"
	"os"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
)

// BenchmarkModes measures requests over HTTPS keep-alive (HTTP/1.1, 8
// client goroutines) to one server per sandbox mode, for a 1 KiB static
// file, a Lua hello hook and a /bin/sh CGI hello. Compare the modes'
// ns/op within one run: the machines are small and noisy.
func BenchmarkModes(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root for the switching modes")
	}
	for _, handler := range []struct{ name, path string }{
		{"static1k", "/1k.txt"},
		{"lua", "/hello"},
		{"cgi", "/cgi/hello.cgi"},
	} {
		for _, mode := range []string{"none", "suexec", "thread", "thread-per-request", "inline"} {
			if mode == "suexec" && handler.name != "cgi" {
				continue
			}
			b.Run(handler.name+"/"+mode, func(b *testing.B) {
				s := benchSite(b, mode)
				c := s.Client("alice.example", false)
				url := "https://alice.example" + handler.path
				b.ReportAllocs()
				b.SetParallelism(4) // 4 x GOMAXPROCS client goroutines
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						resp, err := c.Get(url)
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							b.Errorf("status %d", resp.StatusCode)
							return
						}
					}
				})
			})
		}
	}
}

func benchSite(b *testing.B, mode string) *hosttest.Server {
	dir := tenantDir(b)
	hosttest.Write(b, dir, hosttest.Files{
		"hostd.toml": "[server]\nlisten_https = \"127.0.0.1:0\"\nvhosts = \"vhosts.d/*.toml\"\n",
		"vhosts.d/alice.toml": `server_name = "alice.example"
root = "../alice"
user = "31001"
sandbox = "` + mode + `"
[cgi]
enabled = true
[[hooks]]
phase = "content"
file = "../hooks/hello.lua"
path = "/hello"
`,
		"alice/1k.txt":        string(make([]byte, 1024)),
		"alice/cgi/hello.cgi": "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nHello, world!\\n'\n",
		"hooks/hello.lua":     "r.headers_out[\"Content-Type\"] = \"text/plain\"\nr:write(\"Hello, world!\\n\")\n",
	})
	for _, p := range []string{"alice", "alice/cgi", "alice/cgi/hello.cgi", "alice/1k.txt"} {
		os.Chown(dir+"/"+p, 31001, 31001)
	}
	os.Chmod(dir+"/alice/cgi/hello.cgi", 0o755)
	return hosttest.StartDir(b, dir)
}
