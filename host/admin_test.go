package host_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/net/html"

	"github.com/hostd/hostd/host/admin"
	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

func TestAdminSocketMode(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\n",
		"alice/index.html":    "alice home\n",
	})
	fi, err := os.Stat(admin.SocketPath(s.Config.StateDir))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin socket mode %v, want a 0600 socket", fi.Mode())
	}
}

// traceLineRE is: time vhost uid= tid= method path status bytes duration tls handshake.
var traceLineRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT[\d:.]+Z (\S+) uid=(\d+) tid=(\d+) (\S+) (\S+) (\d{3}) (\d+)B (\S+) (TLS1\.[23]) (full|resumed)$`)

func TestTrace(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\n",
		"vhosts.d/bob.toml":   "server_name = \"bob.example\"\nroot = \"../bob\"\n",
		"alice/index.html":    "alice home\n",
		"bob/index.html":      "bob home\n",
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- adminOf(s).Trace(ctx, "alice.example", pw); pw.Close() }()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "# tracing alice.example") {
		t.Fatalf("trace header %q", lines.Text())
	}
	tc := hosttest.TLSConfig("alice.example")
	tc.NextProtos = []string{"http/1.1"}
	for i, want := range []string{"full", "resumed"} {
		// A new connection each time; the second resumes the first's session.
		c := hosttest.ClientTo(s.HTTPSAddr(), tc, false)
		hosttest.Get(t, s.Client("bob.example", false), "https://bob.example/") // filtered out
		if r := hosttest.Get(t, c, "https://alice.example/index.html?x="+strconv.Itoa(i)); r.StatusCode != 200 {
			t.Fatalf("status %d", r.StatusCode)
		}
		c.CloseIdleConnections()
		if !lines.Scan() {
			t.Fatal("no trace line")
		}
		m := traceLineRE.FindStringSubmatch(lines.Text())
		if m == nil {
			t.Fatalf("trace line %q does not match %v", lines.Text(), traceLineRE)
		}
		if m[1] != "alice.example" || m[2] != strconv.Itoa(os.Geteuid()) || m[4] != "GET" ||
			m[5] != "/index.html?x="+strconv.Itoa(i) || m[6] != "200" || m[7] != "11" || m[10] != want {
			t.Errorf("trace line %q: want alice.example uid=%d GET /index.html?x=%d 200 11B ... %s", lines.Text(), os.Geteuid(), i, want)
		}
		if tid, _ := strconv.Atoi(m[3]); tid <= 0 {
			t.Errorf("tid %q", m[3])
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("trace did not end with its context")
	}
}

func scrape(t *testing.T, addr adminTarget) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := addr.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return mfs
}

// metricValue finds the sample of family name whose labels include want.
func metricValue(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.Metric {
		for k, v := range want {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

const adminMain = `[server]
listen_https = "127.0.0.1:0"
listen_http = "127.0.0.1:0"
vhosts = "vhosts.d/*.toml"
admin_listen = "127.0.0.1:0"
access_log = ""
`

func TestMetricsAndStatusPage(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"hostd.toml":          adminMain,
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\n",
		"vhosts.d/bob.toml":   "server_name = \"bob.example\"\nroot = \"../bob\"\n",
		"alice/index.html":    "alice home\n",
		"bob/index.html":      "bob home\n",
	})
	addr := adminTarget{s.AdminAddr(), s.AdminToken()}
	alice := map[string]string{"vhost": "alice.example"}
	before := scrape(t, addr)
	if v, ok := metricValue(before, "hostd_requests_total", map[string]string{"vhost": "alice.example"}); ok {
		t.Fatalf("hostd_requests_total before any request: %v", v)
	}
	c := s.Client("alice.example", true)
	for range 3 {
		hosttest.Get(t, c, "https://alice.example/")
	}
	hosttest.Get(t, c, "https://alice.example/missing")
	hosttest.Get(t, c, "https://nobody.example/") // SNI alice, Host nobody: 421
	hosttest.Get(t, s.Client("nobody.example", false), "https://nobody.example/")
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, host := range []string{"alice.example", "nobody.example"} {
		req, _ := http.NewRequest("GET", "http://"+s.HTTPAddr()+"/docs/", nil)
		req.Host = host
		resp, err := plain.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	after := scrape(t, addr)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"hostd_requests_total", map[string]string{"vhost": "alice.example", "code": "200", "code_class": "2xx"}, 3},
		{"hostd_requests_total", map[string]string{"vhost": "alice.example", "code": "404", "code_class": "4xx"}, 1},
		{"hostd_https_redirects_total", alice, 1},
		{"hostd_unknown_host_requests_total", map[string]string{"listener": "https"}, 1},
		{"hostd_unknown_host_requests_total", map[string]string{"listener": "http"}, 1},
		{"hostd_misdirected_requests_total", nil, 1},
		{"hostd_max_concurrent_rejections_total", alice, 0},
		{"hostd_session_store_errors_total", alice, 0},
		{"hostd_vhost_config_stale", alice, 0},
		{"hostd_connections_refused_per_ip_total", nil, 0},
		{"hostd_build_info", map[string]string{"goversion": runtime.Version()}, 1},
		{"hostd_request_duration_seconds", alice, 4},
		{"hostd_tls_handshakes_total", map[string]string{"result": "full"}, 2},
		{"hostd_config_generation", nil, 1},
		{"hostd_requests_active", alice, 0},
		{"hostd_hook_errors_total", alice, 0},
		{"hostd_cgi_spawns_total", alice, 0},
	} {
		if v, ok := metricValue(after, tc.name, tc.labels); !ok || v != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, v, ok, tc.want)
		}
	}
	if v, _ := metricValue(after, "hostd_response_bytes_total", alice); v < 3*11 {
		t.Errorf("hostd_response_bytes_total = %v, want >= 33", v)
	}
	if v, ok := metricValue(after, "hostd_requests_total", map[string]string{"vhost": "bob.example"}); ok {
		t.Errorf("bob has a request series before any request: %v", v)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_open_fds"} {
		if after[name] == nil {
			t.Errorf("no %s (Go and process collectors)", name)
		}
	}
	for name := range after {
		if !strings.HasPrefix(name, "hostd_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			t.Errorf("metric %s lacks the hostd_ prefix", name)
		}
	}
	promtoolCheck(t, addr)

	// /status.json is what `hostd status --json` prints.
	var st admin.Status
	jr, err := addr.get("/status.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(jr.Body)
	jr.Body.Close()
	if err := json.Unmarshal(raw, &st); err != nil || jr.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status.json: %v %q", err, jr.Header.Get("Content-Type"))
	}
	if a := st.VHosts["alice.example"]; a.Requests != 4 || a.ByCode["200"] != 3 || a.ByClass["4xx"] != 1 || a.Redirects != 1 || st.Requests.UnknownHost != 2 {
		t.Errorf("status.json: alice %+v, server %+v", a, st.Requests)
	}
	for _, key := range []string{`"tls_handshakes": {`, `"full": `, `"vhosts": {`, `"alice.example": {`, `"by_class": {`, `"2xx": 3`, `"by_code": {`, `"404": 1`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("status.json lacks %s:\n%s", key, raw)
		}
	}
	if m := regexp.MustCompile(`"[a-z_]*[A-Z][A-Za-z_]*":`).Find(raw); m != nil {
		t.Errorf("status.json has a key that is not snake_case: %s", m)
	}

	// The HTML page shows the same numbers.
	resp, err := addr.get("/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("content type %q", ct)
	}
	doc, err := html.Parse(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]map[string]string{} // vhost -> class -> text
	var generation string
	var walk func(n *html.Node, vhost string)
	walk = func(n *html.Node, vhost string) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				switch {
				case a.Key == "data-vhost":
					vhost = a.Val
					rows[vhost] = map[string]string{}
				case a.Key == "class" && vhost != "" && n.FirstChild != nil:
					rows[vhost][a.Val] = n.FirstChild.Data
				case a.Key == "id" && a.Val == "generation" && n.FirstChild != nil:
					generation = n.FirstChild.Data
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, vhost)
		}
	}
	walk(doc, "")
	if rows["alice.example"]["requests"] != "4" || rows["bob.example"]["requests"] != "0" || generation != "1" {
		t.Errorf("status page: rows %v generation %q; want alice 4 requests, bob 0, generation 1", rows, generation)
	}
}

// promtoolCheck runs `promtool check metrics` (Debian package
// prometheus) on a scrape of /metrics: no problem may be reported.
func promtoolCheck(t *testing.T, addr adminTarget) {
	t.Helper()
	if _, err := exec.LookPath("promtool"); err != nil {
		sandboxtest.Skipf(t, "promtool not installed (make deps installs the prometheus package)")
	}
	resp, err := addr.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestReopenLogs(t *testing.T) {
	s := hosttest.Start(t, hosttest.Files{
		"hostd.toml": hosttest.MainConfig + "log_format = \"json\"\n",
		"vhosts.d/alice.toml": "server_name = \"alice.example\"\nroot = \"../alice\"\n" +
			"access_log = \"../logs/alice.access.log\"\nerror_log = \"../logs/alice.error.log\"\n",
		"alice/index.html": "alice home\n",
	})
	c := s.Client("alice.example", false)
	logs := filepath.Join(s.Dir, "logs")
	hosttest.Get(t, c, "https://alice.example/?n=1")
	for _, f := range []string{"access.log", "alice.access.log", "alice.error.log"} {
		if err := os.Rename(filepath.Join(logs, f), filepath.Join(logs, f+".1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ReopenLogs(); err != nil {
		t.Fatal(err)
	}
	hosttest.Get(t, c, "https://alice.example/?n=2")
	for _, f := range []string{"access.log", "alice.access.log"} {
		for file, want := range map[string]string{f + ".1": "/?n=1", f: "/?n=2"} {
			b, err := os.ReadFile(filepath.Join(logs, file))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			var rec struct {
				VHost, URI string
				Status     int
				TLS        string
			}
			if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rec) != nil ||
				rec.URI != want || rec.VHost != "alice.example" || rec.Status != 200 || rec.TLS == "" {
				t.Errorf("%s: %q, want one JSON line for %s", file, b, want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(logs, "alice.error.log")); err != nil {
		t.Errorf("error log not reopened: %v", err)
	}
}
