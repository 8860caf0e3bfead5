package host_test

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
)

// TestSlowClientsFreeCPUShare: clients that send a request and never
// read the answer, or send a body slowly, do not hold the tenant's share
// of the CPU gate while they are waited for: with more such clients than
// CPUs, each stuck in a hook's r:write of a large response or its r.body,
// or in a CGI script's output or input, another request of the same
// tenant still runs at once.
func TestSlowClientsFreeCPUShare(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files hosttest.Files
		big   string
		up    string
		quick string
	}{
		{"hook", hosttest.Files{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../pub\"\nrun_as_server = true\n" +
				"[limits]\nscript_timeout = \"30s\"\nmax_response = \"64MiB\"\n" +
				"[[hooks]]\nphase = \"content\"\nfile = \"../hooks/h.lua\"\n",
			"pub/index.html": "x\n",
			"hooks/h.lua": `if r.path == "/big" then
  local chunk = string.rep("x", 65536)
  for i = 1, 512 do r:write(chunk) end
elseif r.path == "/upload" then
  r:write(#r.body)
else
  r:write("quick")
end`,
		}, "/big", "/upload", "/quick"},
		{"cgi", hosttest.Files{
			"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../pub\"\nrun_as_server = true\n[cgi]\nenabled = true\n",
			"pub/big.cgi":     "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nexec head -c 33554432 /dev/zero\n",
			"pub/upload.cgi":  "#!/bin/sh\nn=$(wc -c)\nprintf 'Content-Type: text/plain\\n\\n%s' \"$n\"\n",
			"pub/quick.cgi":   "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nquick'\n",
		}, "/big.cgi", "/upload.cgi", "/quick.cgi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.files["hostd.toml"] = hosttest.MainConfig + "tenant_cpu_share = 0.5\n"
			s := hosttest.Start(t, tc.files)
			for _, name := range []string{"big.cgi", "upload.cgi", "quick.cgi"} {
				os.Chmod(filepath.Join(s.Dir, "pub", name), 0o755) // the hook variant has none
			}
			slowClients(t, s, tc.big, tc.up, tc.quick)
		})
	}
}

// slowClients starts more clients than CPUs that never read the answer
// to big or never finish sending the body of up, then checks that quick
// is answered at once.
func slowClients(t *testing.T, s *hosttest.Server, big, up, quick string) {
	n := runtime.GOMAXPROCS(0) + 1
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dial := func() *tls.Conn {
		d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			// A small receive buffer: the server's writes block early.
			return rc.Control(func(fd uintptr) {
				syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
			})
		}}
		tc := hosttest.TLSConfig("a.example")
		tc.NextProtos = []string{"http/1.1"}
		c, err := tls.DialWithDialer(&d, "tcp", s.HTTPSAddr(), tc)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		return c
	}
	for i := range n {
		c := dial()
		req := "GET " + big + " HTTP/1.1\r\nHost: a.example\r\n\r\n"
		if i%2 == 1 {
			// A body announced and never sent.
			req = "POST " + up + " HTTP/1.1\r\nHost: a.example\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("y", 100)
		}
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
	}
	s.WaitActive(t, "a.example", int64(n))
	time.Sleep(200 * time.Millisecond) // let the runs reach their blocking write or read
	start := time.Now()
	c := s.Client("a.example", false)
	if got := hosttest.Get(t, c, "https://a.example"+quick).Body; got != "quick" {
		t.Errorf("quick request: %q", got)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a quick request waited %v behind %d clients that do not read or send", d, n)
	}
	// Whole bodies still reach the script, with a length or chunked (in
	// memory, or past 64 KiB through a temporary file); one over max_body
	// (1 MiB) is refused.
	for _, tc := range []struct {
		size    int
		chunked bool
		want    string
	}{
		{1000, false, "1000"}, {1000, true, "1000"}, {200000, false, "200000"}, {200000, true, "200000"},
		{2 << 20, false, ""}, {2 << 20, true, ""},
	} {
		var body io.Reader = strings.NewReader(strings.Repeat("z", tc.size))
		if tc.chunked {
			body = io.MultiReader(body) // no length known: sent chunked
		}
		req, err := http.NewRequest("POST", "https://a.example"+up, body)
		if err != nil {
			t.Fatal(err)
		}
		if tc.want == "" {
			// The server answers 413 without reading the rest and closes:
			// the client may see the answer or a reset while it writes.
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusRequestEntityTooLarge {
					t.Errorf("upload of %d bytes (chunked %v): %d, want 413", tc.size, tc.chunked, resp.StatusCode)
				}
			} else if !strings.Contains(err.Error(), "connection reset") && !strings.Contains(err.Error(), "broken pipe") {
				t.Errorf("upload of %d bytes (chunked %v): %v", tc.size, tc.chunked, err)
			}
			continue
		}
		if resp := hosttest.Do(t, c, req); resp.Body != tc.want {
			t.Errorf("upload of %d bytes (chunked %v): %d %q", tc.size, tc.chunked, resp.StatusCode, resp.Body)
		}
	}
}
