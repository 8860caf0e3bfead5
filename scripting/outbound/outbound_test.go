package outbound_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/outbound"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

func TestCheckEntry(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"api.example.com", true}, {"*.example.com", true}, {"10.1.2.0/24", true},
		{"10.1.2.3", true}, {"fd00::1", true}, {"[fd00::1]", true}, {"2001:db8::/32", true},
		{"", false}, {" api.example.com", false}, {"https://api.example.com", false},
		{"api.example.com:443", false}, {"10.1.2.0/33", false}, {"a..b", false},
		{"-a.example", false}, {"exa mple.com", false}, {"*", false}, {"fe80::1%eth0", false},
	} {
		if err := outbound.CheckEntry(tc.in); (err == nil) != tc.ok {
			t.Errorf("CheckEntry(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

func TestPolicy(t *testing.T) {
	p, err := outbound.NewPolicy([]string{"api.example.com", "*.svc.example", "10.1.2.0/24", "0.0.0.0/0", "203.0.113.7", "127.0.0.5"},
		[]netip.Addr{netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("10.1.2.9"), netip.MustParseAddr("198.51.100.1")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"api.example.com", true}, {"API.Example.COM.", true}, {"x.api.example.com", false},
		{"a.svc.example", true}, {"svc.example", false}, {"evil-svc.example", false},
		{"10.1.2.3", true}, {"8.8.8.8", true}, {"[::1]", false}, {"other.example", false},
	} {
		if got := p.AllowHost(tc.host); got != tc.ok {
			t.Errorf("AllowHost(%q) = %v, want %v", tc.host, got, tc.ok)
		}
	}
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"93.184.216.34", true},    // public
		{"10.1.2.3", true},         // named by 10.1.2.0/24 (narrower than 10/8)
		{"10.9.9.9", false},        // private, only 0.0.0.0/0 covers it
		{"127.0.0.1", false},       // loopback
		{"127.0.0.5", true},        // named exactly
		{"169.254.169.254", false}, // metadata
		{"100.64.0.1", false}, {"172.16.0.1", false}, {"192.168.1.1", false}, {"0.0.0.0", false},
		{"224.0.0.1", false}, {"255.255.255.255", false},
		{"::1", false}, {"::", false}, {"fe80::1", false}, {"fd00::1", false}, {"ff02::1", false},
		{"::ffff:127.0.0.1", false}, {"::ffff:169.254.169.254", false},
		{"64:ff9b::7f00:1", false},    // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", false}, // NAT64 of 169.254.169.254
		{"64:ff9b::5db8:d822", true},  // NAT64 of a public address
		{"2002:7f00:1::1", false},     // 6to4 of 127.0.0.1
		{"2606:4700::1", true},
		{"203.0.113.7", true},   // a store, named exactly
		{"10.1.2.9", false},     // a store inside 10.1.2.0/24: not named exactly
		{"198.51.100.1", false}, // a store not named
	} {
		if got := p.AllowAddr(netip.MustParseAddr(tc.addr)); got != tc.ok {
			t.Errorf("AllowAddr(%s) = %v, want %v", tc.addr, got, tc.ok)
		}
	}
	empty, _ := outbound.NewPolicy(nil, nil)
	if !empty.Empty() || empty.AllowHost("api.example.com") || empty.AllowHost("8.8.8.8") {
		t.Error("an empty policy allows something")
	}
}

func TestClient(t *testing.T) {
	h := scriptingtest.NewHTTPSetup(t)
	c, srvPort, redisPort, redisConns := h.Client, h.Port, h.RedisPort, h.RedisConns
	ctx := context.Background()
	get := func(u string, timeout time.Duration) (*scripting.HTTPResponse, error) {
		return c.Do(ctx, &scripting.HTTPRequest{Method: "GET", URL: u, Header: http.Header{"X-In": {"v"}}, Timeout: timeout})
	}

	t.Run("allowed", func(t *testing.T) {
		for _, u := range []string{"https://127.0.0.2:" + srvPort + "/ok", "https://api.test:" + srvPort + "/ok"} {
			r, err := get(u, 0)
			if err != nil {
				t.Fatalf("%s: %v", u, err)
			}
			if r.Status != 200 || string(r.Body) != "hello GET" || r.Header.Get("X-Echo") != "v" {
				t.Errorf("%s: got %d %q %v", u, r.Status, r.Body, r.Header)
			}
			v := r.Value()
			if h := v["headers"].(map[string]any); h["x-echo"] != "v" || len(h["set-cookie"].([]any)) != 2 {
				t.Errorf("Value headers = %v", h)
			}
		}
	})
	t.Run("size cap", func(t *testing.T) {
		_, err := get("https://127.0.0.2:"+srvPort+"/big", 0)
		if !errors.Is(err, outbound.ErrTooLarge) {
			t.Errorf("5000-byte body with a 4096 cap: err = %v", err)
		}
		r, err := c.Do(ctx, &scripting.HTTPRequest{Method: "GET", URL: "https://127.0.0.2:" + srvPort + "/ok", MaxBody: 3})
		if !errors.Is(err, outbound.ErrTooLarge) {
			t.Errorf("per-request max_body 3: %v %v", r, err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		cctx, cancel := scripting.HTTPDeadline(ctx, time.Now().Add(time.Minute), 200*time.Millisecond)
		defer cancel()
		begin := time.Now()
		_, err := c.Do(cctx, &scripting.HTTPRequest{Method: "GET", URL: "https://127.0.0.2:" + srvPort + "/slow"})
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("slow server: err = %v", err)
		}
		if d := time.Since(begin); d > 2*time.Second {
			t.Errorf("timeout took %v", d)
		}
	})
	refused := []struct{ name, url string }{
		{"redis literal", "http://127.0.0.1:" + redisPort + "/"},
		{"redis via DNS", "http://redis.test:" + redisPort + "/"},
		{"metadata literal", "http://169.254.169.254/latest/meta-data/"},
		{"metadata via DNS", "http://meta.test/latest/meta-data/"},
		{"unlisted name", "https://example.com/"},
		{"redirect to redis literal", "https://127.0.0.2:" + srvPort + "/to?u=http://127.0.0.1:" + redisPort + "/"},
		{"redirect to redis via DNS", "https://127.0.0.2:" + srvPort + "/to?u=http://redis.test:" + redisPort + "/"},
		{"redirect to metadata", "https://127.0.0.2:" + srvPort + "/to?u=http://169.254.169.254/latest/"},
		{"redirect to metadata via DNS", "https://127.0.0.2:" + srvPort + "/to?u=http://meta.test/latest/"},
		{"redirect to NAT64 loopback", "https://127.0.0.2:" + srvPort + "/to?u=http://[64:ff9b::7f00:1]:" + redisPort + "/"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			before := c.Stats.Refused.Load()
			_, err := get(tc.url, time.Second)
			if !errors.Is(err, outbound.ErrRefused) {
				t.Errorf("%s: err = %v, want ErrRefused", tc.url, err)
			}
			if c.Stats.Refused.Load() == before {
				t.Error("refused counter did not move")
			}
		})
	}
	if n := redisConns.Load(); n != 0 {
		t.Errorf("the fake Redis saw %d connections", n)
	}
	if c.Stats.Requests.Load() == 0 || c.Stats.Errors.Load() == 0 {
		t.Errorf("stats: requests %d errors %d", c.Stats.Requests.Load(), c.Stats.Errors.Load())
	}
	t.Run("scheme", func(t *testing.T) {
		if _, err := get("file:///etc/passwd", 0); err == nil {
			t.Error("file URL accepted")
		}
	})
}

// TestProtectedStore: a store inside an allowed range is reachable only
// through an entry naming exactly its address.
func TestProtectedStore(t *testing.T) {
	addr, conns := scriptingtest.FakeRedis(t, "127.0.0.3:0")
	for _, tc := range []struct {
		allow  []string
		closed bool
		ok     bool
	}{
		{[]string{"127.0.0.0/8"}, false, false},
		{[]string{"127.0.0.3"}, false, true},
		{[]string{"127.0.0.3"}, true, false}, // the tenant wrote the list: never the stores
	} {
		c, err := outbound.New(outbound.Options{Allow: tc.allow, Protected: []netip.Addr{netip.MustParseAddr("127.0.0.3")}, StoresClosed: tc.closed})
		if err != nil {
			t.Fatal(err)
		}
		before := conns.Load()
		_, err = c.Do(context.Background(), &scripting.HTTPRequest{Method: "GET", URL: "http://" + addr + "/", Timeout: time.Second})
		reached := conns.Load() > before
		if reached != tc.ok || (!tc.ok && !errors.Is(err, outbound.ErrRefused)) {
			t.Errorf("allow %v: reached %v err %v, want reached %v", tc.allow, reached, err, tc.ok)
		}
		c.Close()
	}
}

// TestTimeoutError: whichever step the deadline stops (the TLS handshake
// with a server that accepts and never answers, or the wait for the
// response), the error is ErrTimeout, so a hook matches one message.
func TestTimeoutError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range conns {
					c.Close()
				}
				return
			}
			conns = append(conns, c) // accepted, never answered
		}
	}()
	defer func() { ln.Close(); <-done }()
	c, hdr := scriptingtest.StartHTTP(t)
	oc, err := outbound.New(outbound.Options{Allow: []string{"127.0.0.2"}, MaxBody: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	for _, tc := range []struct {
		name   string
		client scripting.HTTPClient
		url    string
	}{
		{"handshake", oc, "https://" + ln.Addr().String() + "/"},
		{"response", c, hdr["X-Base"] + "/slow"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := tc.client.Do(ctx, &scripting.HTTPRequest{Method: "GET", URL: tc.url})
		cancel()
		if !errors.Is(err, outbound.ErrTimeout) {
			t.Errorf("%s: err = %v, want ErrTimeout", tc.name, err)
		}
	}
}
