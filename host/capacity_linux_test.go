package host_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/hostd/hostd/host/hosttest"
)

// slowSite serves slow.example in thread-per-request mode (each request
// in progress holds a fresh OS thread of its own) with a 20 MB file, and
// other.example, with write_timeout = 2s and a budget of 24 tenant
// threads.
func slowSite(t *testing.T, limits string) *hosttest.Server {
	t.Helper()
	dir := tenantDir(t)
	hosttest.Write(t, dir, hosttest.Files{
		"hostd.toml": hosttest.MainConfig + "write_timeout = \"2s\"\nmax_threads = 24\nhandshake_wait = \"300ms\"\n" +
			"admin_listen = \"127.0.0.1:0\"\nmax_handshakes = -1\naccept_rate = -1\nmax_conns_per_ip = -1\n",
		"vhosts.d/slow.toml": fmt.Sprintf("server_name = \"slow.example\"\nroot = \"../slow\"\nuser = \"%d\"\n"+
			"sandbox = \"thread-per-request\"\n[limits]\n%s", aliceUID, limits),
		"vhosts.d/other.toml": "server_name = \"other.example\"\nroot = \"../other\"\n",
		"slow/small.txt":      "small\n",
		"other/index.html":    "other\n",
	})
	big := filepath.Join(dir, "slow/big.bin")
	if err := os.WriteFile(big, bytes.Repeat([]byte("0123456789abcdef"), 20<<20/16), 0o644); err != nil {
		t.Fatal(err)
	}
	return hosttest.StartDir(t, dir)
}

// threads returns this process's OS threads (the server runs in it).
func threads(t *testing.T) int {
	t.Helper()
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatal("no Threads in /proc/self/status")
	return 0
}

// eventually polls get until it answers 200 or d passes.
func eventually(t *testing.T, d time.Duration, what string, get func() int) time.Duration {
	t.Helper()
	start := time.Now()
	last := 0
	for time.Since(start) < d {
		if last = get(); last == 200 {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: still %d after %s", what, last, d)
	return 0
}

// freshGet fetches url over a new connection (no keep-alive), for host sni.
func freshGet(s *hosttest.Server, sni, path string) int {
	c := hosttest.ClientTo(s.HTTPSAddr(), hosttest.TLSConfig(sni), false)
	defer c.CloseIdleConnections()
	c.Timeout = 5 * time.Second
	resp, err := c.Get("https://" + sni + path)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// unreadH2 opens one HTTP/2 connection to sni and starts n GETs of path
// on it, then never reads: neither the socket nor, so, any stream.
func unreadH2(t *testing.T, addr, sni, path string, n int) net.Conn {
	t.Helper()
	tc := hosttest.TLSConfig(sni)
	tc.NextProtos = []string{"h2"}
	c, err := tls.Dial("tcp", addr, tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.ConnectionState().NegotiatedProtocol != "h2" {
		t.Fatal("no h2")
	}
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.WriteSettings()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := range n {
		hb.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", sni}, {":path", path}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hb.Bytes(),
			EndStream: true, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestSlowClientsCannotPin is issue 15's capacity attack: 100 unread
// HTTP/2 streams, then 8 slow HTTP/1.1 readers, against a vhost whose
// requests each hold an OS thread. The thread count stays within the
// budget, the vhost serves others again within write_timeout, and a
// slow download that keeps moving is not cut.
func TestSlowClientsCannotPin(t *testing.T) {
	requireRoot(t)
	s := slowSite(t, "max_concurrent = 8\nmax_concurrent_per_client = -1\n")
	base := threads(t)

	t.Run("100 unread h2 streams", func(t *testing.T) {
		c := unreadH2(t, s.HTTPSAddr(), "slow.example", "/big.bin", 100)
		s.WaitActive(t, "slow.example", 8) // max_concurrent: the rest get 503
		if n := threads(t); n > base+24+16 {
			t.Errorf("threads: %d, base %d, budget 24", n, base)
		}
		// Others are served within the write timeout (2s) and some margin.
		d := eventually(t, 6*time.Second, "slow.example for another client", func() int { return freshGet(s, "slow.example", "/small.txt") })
		t.Logf("served others again after %s", d)
		if code := freshGet(s, "other.example", "/"); code != 200 {
			t.Errorf("other.example: %d", code)
		}
		// The streams were reset by the server at their write deadline
		// (the connection's own window kept TCP from blocking).
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		fr := http2.NewFramer(io.Discard, c)
		resets, closed := 0, false
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				closed = isClosed(err)
				break
			}
			if _, ok := f.(*http2.RSTStreamFrame); ok {
				resets++
			}
		}
		if resets == 0 && !closed {
			t.Error("the unread streams were neither reset nor their connection closed")
		}
		t.Logf("%d streams reset, connection closed: %v", resets, closed)
	})

	t.Run("8 slow HTTP/1.1 readers", func(t *testing.T) {
		for range 8 {
			unreadDownload(t, s)
		}
		s.WaitActive(t, "slow.example", 8)
		d := eventually(t, 6*time.Second, "slow.example for another client", func() int { return freshGet(s, "slow.example", "/small.txt") })
		t.Logf("served others again after %s", d)
		if n := threads(t); n > base+24+16 {
			t.Errorf("threads: %d, base %d, budget 24", n, base)
		}
	})

	t.Run("slow moving download survives", func(t *testing.T) {
		c := unreadDownload(t, s)
		buf := make([]byte, 32<<10)
		var got int
		start := time.Now()
		for time.Since(start) < 5*time.Second { // 2.5 x write_timeout
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			n, err := io.ReadFull(c, buf)
			got += n
			if err != nil {
				t.Fatalf("slow reader cut after %s and %d bytes: %v", time.Since(start), got, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Logf("read %d bytes in %s", got, time.Since(start))
	})

	mfs := scrape(t, adminTarget{s.AdminAddr(), s.AdminToken()})
	if v, ok := metricValue(mfs, "hostd_tenant_threads_budget", nil); !ok || v != 24 {
		t.Errorf("hostd_tenant_threads_budget = %v %v", v, ok)
	}
	if _, ok := metricValue(mfs, "hostd_os_threads", nil); !ok {
		t.Error("no hostd_os_threads")
	}
}

func isClosed(err error) bool {
	return err == io.EOF || strings.Contains(err.Error(), "reset by peer") || strings.Contains(err.Error(), "closed")
}

// TestPerClientLimit: max_concurrent_per_client bounds one client's
// requests in progress on a vhost; another client still gets in.
func TestPerClientLimit(t *testing.T) {
	requireRoot(t)
	s := slowSite(t, "max_concurrent = 64\nmax_concurrent_per_client = 2\n")
	for range 2 {
		unreadDownload(t, s)
	}
	s.WaitActive(t, "slow.example", 2)
	if code := freshGet(s, "slow.example", "/small.txt"); code != http.StatusServiceUnavailable {
		t.Errorf("third request of 127.0.0.1: %d, want 503", code)
	}
	// Another loopback address is another client.
	tc := hosttest.TLSConfig("slow.example")
	tc.NextProtos = []string{"http/1.1"}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	c, err := tls.DialWithDialer(&d, "tcp", s.HTTPSAddr(), tc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /small.txt HTTP/1.1\r\nHost: slow.example\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(b), "HTTP/1.1 200") {
		t.Errorf("127.0.0.2: %.40q", b)
	}
	// And 127.0.0.1 is served again once its downloads are dropped.
	eventually(t, 6*time.Second, "127.0.0.1 after write_timeout", func() int { return freshGet(s, "slow.example", "/small.txt") })
	if v, ok := metricValue(scrape(t, adminTarget{s.AdminAddr(), s.AdminToken()}), "hostd_client_concurrency_rejections_total", nil); !ok || v < 1 {
		t.Errorf("hostd_client_concurrency_rejections_total = %v", v)
	}
}

// unreadDownload starts a download of slow.example/big.bin over HTTP/1.1
// and reads nothing; the connection is closed when the test ends.
func unreadDownload(t *testing.T, s *hosttest.Server) net.Conn {
	t.Helper()
	tc := hosttest.TLSConfig("slow.example")
	tc.NextProtos = []string{"http/1.1"}
	c, err := tls.Dial("tcp", s.HTTPSAddr(), tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "GET /big.bin HTTP/1.1\r\nHost: slow.example\r\n\r\n")
	return c
}
