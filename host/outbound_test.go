package host_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// TestOutboundEndToEnd: a hook's hostd.http.request reaches the host its
// vhost's outbound key lists, is refused the session Redis (also through
// a redirect) and unlisted hosts, and the counters show in /metrics.
func TestOutboundEndToEnd(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		sandboxtest.Skipf(t, "listen 127.0.0.2: %v", err)
	}
	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.URL.Query().Get("to"); u != "" {
			http.Redirect(w, r, u, http.StatusFound)
			return
		}
		w.Write([]byte("api says hi"))
	}))
	api.Listener.Close()
	api.Listener = ln
	api.Start()
	defer api.Close()
	redis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer redis.Close()
	var redisConns atomic.Int32
	go func() {
		for {
			c, err := redis.Accept()
			if err != nil {
				return
			}
			redisConns.Add(1)
			c.Close()
		}
	}()
	s := hosttest.Start(t, hosttest.Files{
		"hostd.toml": adminMain + "[sessions]\nstore = \"redis\"\nurl = \"redis://" + redis.Addr().String() + "/0\"\n",
		"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../pub\"\nrun_as_server = true\n" +
			"outbound = [\"127.0.0.0/8\"]\n[sessions]\nstore = \"memory\"\n" +
			"[[hooks]]\nphase = \"content\"\nfile = \"../hooks/out.lua\"\n",
		"pub/index.html": "x\n",
		"hooks/out.lua": `local res, err = hostd.http.request{url = r.headers_in["X-Url"], timeout = 2}
if res then r:write(res.status, " ", res.body) else r:write("refused: ", tostring(err:find("not allowed", 1, true) ~= nil)) end`,
	})
	c := s.Client("a.example", true)
	get := func(u string) string {
		req, _ := http.NewRequest("GET", "https://a.example/", nil)
		req.Header.Set("X-Url", u)
		return hosttest.Do(t, c, req).Body
	}
	if got := get(api.URL + "/"); got != "200 api says hi" {
		t.Errorf("allowed host: %q", got)
	}
	for _, u := range []string{
		"http://" + redis.Addr().String() + "/",          // the session Redis, inside 127.0.0.0/8
		api.URL + "/?to=http://" + redis.Addr().String(), // through a redirect
		"http://169.254.169.254/latest/meta-data/",
		"https://example.com/",
	} {
		if got := get(u); got != "refused: true" {
			t.Errorf("%s: %q, want refused", u, got)
		}
	}
	if n := redisConns.Load(); n != 0 {
		t.Errorf("the session Redis saw %d connections from hooks", n)
	}
	mfs := scrape(t, adminTarget{s.AdminAddr(), s.AdminToken()})
	a := map[string]string{"vhost": "a.example"}
	if v, _ := metricValue(mfs, "hostd_outbound_requests_total", a); v != 5 {
		t.Errorf("hostd_outbound_requests_total = %v, want 5", v)
	}
	if v, _ := metricValue(mfs, "hostd_outbound_refused_total", a); v < 4 {
		t.Errorf("hostd_outbound_refused_total = %v, want >= 4", v)
	}
	if v, _ := metricValue(mfs, "hostd_outbound_response_bytes_total", a); v != float64(len("api says hi")) {
		t.Errorf("hostd_outbound_response_bytes_total = %v", v)
	}
	if strings.Contains(s.Logs.String(), "panic") {
		t.Error("panic in the log")
	}
}

// TestSharedDictSurvivesReload: a reload that rebuilds the vhost (its
// max_body changed) keeps the shared dictionary, in both languages.
func TestSharedDictSurvivesReload(t *testing.T) {
	for _, lang := range []string{"lua", "rb"} {
		t.Run(lang, func(t *testing.T) {
			src := map[string]string{
				"lua": `local n = hostd.shared:incr("n", 1) hostd.shared:add("first", n) r:write(n, " ", hostd.shared:get("first"))`,
				"rb":  `n = Hostd.shared.incr("n", 1); Hostd.shared.add("first", n); r.write(n, " ", Hostd.shared.get("first"))`,
			}[lang]
			vh := "server_name = \"a.example\"\nroot = \"../pub\"\nrun_as_server = true\n[limits]\nmax_body = %d\n[[hooks]]\nphase = \"content\"\nfile = \"../hooks/c." + lang + "\"\n"
			s := hosttest.Start(t, hosttest.Files{
				"vhosts.d/a.toml": fmt.Sprintf(vh, 1000),
				"pub/index.html":  "x\n",
				"hooks/c." + lang: src,
			})
			c := s.Client("a.example", true)
			for i, want := range []string{"1 1", "2 1"} {
				if got := hosttest.Get(t, c, "https://a.example/").Body; got != want {
					t.Fatalf("request %d: %q, want %q", i+1, got, want)
				}
			}
			hosttest.Write(t, s.Dir, hosttest.Files{"vhosts.d/a.toml": fmt.Sprintf(vh, 2000)})
			res, err := s.Reload(context.Background())
			if err != nil || res.Changed != 1 {
				t.Fatalf("reload: %+v %v", res, err)
			}
			if got := hosttest.Get(t, c, "https://a.example/").Body; got != "3 1" {
				t.Errorf("after the reload: %q, want \"3 1\"", got)
			}
		})
	}
}

// TestOutboundWaitFreesCPUShare: hooks waiting for a slow remote API do
// not hold the tenant's share of the CPU gate (tenant_cpu_share, on by
// default): more such hooks than there are CPUs are waiting, and another
// request of the same tenant still runs at once.
func TestOutboundWaitFreesCPUShare(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		sandboxtest.Skipf(t, "listen 127.0.0.2: %v", err)
	}
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	var waiting atomic.Int64 // hooks whose request reached the slow server
	slow := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		waiting.Add(1)
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		w.Write([]byte("slow"))
	}))
	slow.Listener.Close()
	slow.Listener = ln
	slow.Start()
	defer slow.Close()
	defer free()
	s := hosttest.Start(t, hosttest.Files{
		"hostd.toml": hosttest.MainConfig + "tenant_cpu_share = 0.5\n",
		"vhosts.d/a.toml": "server_name = \"a.example\"\nroot = \"../pub\"\nrun_as_server = true\noutbound = [\"127.0.0.2\"]\n" +
			"[limits]\nscript_timeout = \"20s\"\n" +
			"[[hooks]]\nphase = \"content\"\nfile = \"../hooks/h.lua\"\n",
		"pub/index.html": "x\n",
		"hooks/h.lua": `if r.path == "/slow" then
  local res, err = hostd.http.request{url = "` + slow.URL + `/"}
  r:write(res and res.body or err)
else
  r:write("quick")
end`,
	})
	c := s.Client("a.example", true)
	n := runtime.GOMAXPROCS(0) + 1
	done := make(chan string, n)
	for range n {
		go func() {
			req, _ := http.NewRequest("GET", "https://a.example/slow", nil)
			resp, err := c.Do(req)
			if err != nil {
				done <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			done <- string(b)
		}()
	}
	sandboxtest.WaitFor(t, "the slow hooks to wait for the network", func() bool { return waiting.Load() == int64(n) })
	start := time.Now()
	if got := hosttest.Get(t, c, "https://a.example/quick").Body; got != "quick" {
		t.Errorf("quick request: %q", got)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a quick request waited %v behind %d hooks waiting for the network", d, n)
	}
	free()
	for range n {
		select {
		case got := <-done:
			if got != "slow" {
				t.Errorf("slow request: %q", got)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("slow requests did not finish")
		}
	}
}
