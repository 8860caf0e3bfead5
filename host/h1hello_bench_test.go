package host_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"strconv"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/scripting/mruby"
	"github.com/hostd/hostd/tenant"
)

// BenchmarkH1Hello serves the bench's hello responses (native, Lua,
// mruby) over one HTTPS/1.1 keep-alive connection on loopback, with the
// bench's settings (no access log, hook files checked once a second): the
// whole request path, TLS and system calls included. The client writes
// fixed bytes and reads the response with one buffer, so what -benchmem
// counts is, but for a few bytes, the server's.
func BenchmarkH1Hello(b *testing.B) {
	main := hosttest.Main()
	main.Server.AccessLog = ""
	main.Server.HookCheckInterval = tenant.Duration(time.Second)
	vh := `server_name = "a.example"
root = "../pub"
run_as_server = true
[[respond]]
path = "/native"
body = "Hello, world!\n"
content_type = "text/plain"
[[hooks]]
phase = "content"
file = "../hooks/hello.lua"
path = "/lua"
`
	if mruby.Available {
		vh += `[[hooks]]
phase = "content"
file = "../hooks/hello.rb"
path = "/mruby"
`
	}
	s := hosttest.Start(b, hosttest.Files{
		"hostd.toml":      hosttest.TOML(b, main),
		"vhosts.d/a.toml": vh,
		"pub/index.html":  "x",
		"hooks/hello.lua": "r.headers_out[\"Content-Type\"] = \"text/plain\"\nr:write(\"Hello, world!\\n\")\n",
		"hooks/hello.rb":  "r.headers_out[\"Content-Type\"] = \"text/plain\"\nr.write(\"Hello, world!\\n\")\n",
	})
	for _, path := range []string{"/native", "/lua", "/mruby"} {
		if path == "/mruby" && !mruby.Available {
			continue
		}
		b.Run(path[1:], func(b *testing.B) {
			tc, err := tls.Dial("tcp", s.HTTPSAddr(), &tls.Config{ServerName: "a.example", InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
			if err != nil {
				b.Fatal(err)
			}
			defer tc.Close()
			req := []byte("GET " + path + " HTTP/1.1\r\nHost: a.example\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n")
			br := bufio.NewReaderSize(tc, 4096)
			get := func() {
				if _, err := tc.Write(req); err != nil {
					b.Fatal(err)
				}
				n := -1
				for {
					line, err := br.ReadSlice('\n')
					if err != nil {
						b.Fatal(err)
					}
					if len(line) == 2 {
						break
					}
					if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
						n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
					}
				}
				if n != 14 {
					b.Fatalf("%s: Content-Length %d, want 14", path, n)
				}
				if _, err := br.Discard(n); err != nil {
					b.Fatal(err)
				}
			}
			get()
			b.ReportAllocs()
			for b.Loop() {
				get()
			}
		})
	}
}
