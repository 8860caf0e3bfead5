package host_test

import (
	"crypto/tls"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
)

// TestSlowClientsFreeCPUShare: clients that send a request and never
// read the answer, or send a body slowly, do not hold the tenant's share
// of the CPU gate while the hook waits for them: with more such clients
// than CPUs, each stuck in the hook's r:write of a large response or in
// r.body, another request of the same tenant still runs at once.
func TestSlowClientsFreeCPUShare(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"hostd.toml": hosttest.MainConfig + "tenant_cpu_share = 0.5\n",
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
	})
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
		req := "GET /big HTTP/1.1\r\nHost: a.example\r\n\r\n"
		if i%2 == 1 {
			// A body announced and never sent.
			req = "POST /upload HTTP/1.1\r\nHost: a.example\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("y", 100)
		}
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
	}
	s.WaitActive(t, "a.example", int64(n))
	time.Sleep(200 * time.Millisecond) // let the hooks reach their blocking write or read
	start := time.Now()
	c := s.Client("a.example", false)
	if got := hosttest.Get(t, c, "https://a.example/quick").Body; got != "quick" {
		t.Errorf("quick request: %q", got)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a quick request waited %v behind %d clients that do not read or send", d, n)
	}
}
