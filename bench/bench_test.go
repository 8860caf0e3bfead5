package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/bench/load"
	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/tenant"
)

func TestSelector(t *testing.T) {
	for _, tc := range []struct {
		spec, name string
		want       bool
	}{
		{"", "lua/thread/https", true},
		{"lua", "lua/thread/https", true},
		{"lua", "luax/thread/https", false},
		{"lua", "sweep/lua/thread", false},
		{"*/inline", "lua/inline/https", true},
		{"*/inline", "lua/thread/https", false},
		{"*/*/https", "cgi/suexec/https", true},
		{"*/*/https", "cgi/suexec/https-new", false},
		{"*/*/https*", "cgi/suexec/https-new", true},
		{"sweep", "sweep/lua/none", true},
		{"static,native/none", "native/none/h1", true},
		{"static, native/none", "native/thread/h1", false},
		{"lua/thread/https/extra", "lua/thread/https", false},
	} {
		if got := newSelector(tc.spec).match(tc.name); got != tc.want {
			t.Errorf("selector %q match %q = %v, want %v", tc.spec, tc.name, got, tc.want)
		}
	}
}

func TestPlan(t *testing.T) {
	count := func(cells []plannedCell) (closed, sweep int, names map[string]bool) {
		names = map[string]bool{}
		for _, c := range cells {
			if names[c.name()] {
				t.Errorf("cell %s planned twice", c.name())
			}
			names[c.name()] = true
			if c.sweep {
				sweep++
			} else {
				closed++
			}
		}
		return
	}
	// Per transport: 4 in-process handlers x 5 modes + the shell CGI x 6;
	// the 4 PHP handlers x 6 modes and the cached static file x 3 over
	// HTTPS keep-alive only.
	closed, sweep, names := count(plan(false, nil, false))
	if closed != 4*26+24+3 || sweep != 8 {
		t.Errorf("default plan: %d closed, %d sweeps; want 131 and 8", closed, sweep)
	}
	if !names["static-cached/uring/https"] || names["static-cached/inline/https"] || names["static-cached/none/h1"] {
		t.Error("default plan: the cached static file in none, uring and thread, keep-alive only")
	}
	if names["lua/suexec/https"] || !names["cgi/suexec/https-resume"] || !names["php-fpm/inline/https"] || names["php-cgi/none/h1"] {
		t.Error("default plan: suexec must be for child processes only, all transports present, PHP on keep-alive only")
	}
	// --quick: the https grid, and 5 cells on each other transport.
	closed, sweep, names = count(plan(true, nil, false))
	if closed != 50+3+15 || sweep != 4 {
		t.Errorf("quick plan: %d closed, %d sweeps; want 68 and 4", closed, sweep)
	}
	if !names["mruby/thread-per-request/https"] || names["static/none/h1"] || !names["cgi/suexec/https-new"] {
		t.Error("quick plan: full grid over https, sparse other transports")
	}
	closed, sweep, _ = count(plan(true, newSelector("sweep/lua/none,native/none/https"), false))
	if closed != 1 || sweep != 1 {
		t.Errorf("selected plan: %d closed, %d sweeps; want 1 and 1", closed, sweep)
	}
}

func TestRoundRate(t *testing.T) {
	for in, want := range map[float64]float64{0.2: 1, 7.4: 7, 12.4: 12, 1234: 1200, 9876: 9900, 25874: 26000} {
		if got := roundRate(in); got != want {
			t.Errorf("roundRate(%v) = %v, want %v", in, got, want)
		}
	}
}

// fakeReport is a report with known numbers, as Run would leave it.
func fakeReport() *Report {
	res := func(rps float64) *load.Result {
		return &load.Result{OK: int64(rps), RPS: rps, Duration: time.Second,
			Latency: load.Latency{P50: time.Millisecond, P90: 2 * time.Millisecond, P99: 3 * time.Millisecond}}
	}
	r := &Report{Options: ReportOptions{Tenants: 2, Conns: 32, Duration: time.Second}}
	add := func(h, m string, rps float64, size int) {
		r.Cells = append(r.Cells, CellResult{Name: closedName(h, m, load.HTTPS), Handler: h, Mode: m, Transport: "https",
			Status: StatusOK, Result: res(rps), ResponseBytes: size, ServerCPUPerReq: time.Duration(1e9 / rps)})
	}
	add("native", "none", 1000, 116)
	add("native", "thread", 900, 116)
	add("lua", "none", 950, 116)
	add("lua", "thread", 855, 116)
	add("lua", "inline", 450, 116)
	add("cgi", "none", 100, 116)
	add("cgi", "suexec", 90, 116)
	r.Cells = append(r.Cells, CellResult{Name: "mruby/none/https", Handler: "mruby", Mode: "none", Transport: "https",
		Status: StatusSkipped, Reason: "no mruby"})
	r.Sweeps = []SweepResult{{Name: "sweep/lua/none", Handler: "lua", Mode: "none", Transport: "https", Status: StatusOK,
		Points: []load.Result{{Offered: 100, RPS: 100}, {Offered: 200, RPS: 150, Errors: map[string]int64{load.ErrUnsent: 5}}}}}
	r.finish()
	return r
}

func TestReportRatios(t *testing.T) {
	r := fakeReport()
	want := map[string]float64{"lua: thread / none": 0.9, "lua: inline / thread": 450.0 / 855, "lua / native (none)": 0.95,
		"lua / native (thread)": 0.95, "cgi: suexec / none": 0.9}
	got := map[string]Target{}
	for _, tg := range r.Targets {
		got[tg.Name] = tg
	}
	for name, v := range want {
		tg, ok := got[name]
		if !ok || tg.Value < v-1e-9 || tg.Value > v+1e-9 {
			t.Errorf("target %s = %+v, want %v", name, tg, v)
		}
	}
	if tg := got["cgi: suexec / none"]; tg.ByCPU < 0.9-1e-6 || tg.ByCPU > 0.9+1e-6 {
		t.Errorf("cgi suexec/none by CPU = %v, want 0.9 (CPU per request 1/90 s vs 1/100 s)", tg.ByCPU)
	}
	if got["lua: thread / none"].Met() || !got["lua / native (none)"].Met() {
		t.Error("goals: thread/none 0.90 < 0.95 is not met, lua/native 0.95 >= 0.9 is")
	}
	if _, ok := got["mruby / native (none)"]; ok {
		t.Error("a ratio of a skipped cell")
	}
	c := r.cell("cgi", "suexec", load.HTTPS)
	if c.VsNone != 0.9 || c.VsNative != 0.09 {
		t.Errorf("cgi suexec: vs none %v vs native %v, want 0.9 and 0.09 (native in none)", c.VsNone, c.VsNative)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "byte-identical in size: 116") {
		t.Errorf("notes %q", r.Notes)
	}
	r.Cells[0].ResponseBytes = 120
	r.Notes, r.Targets = nil, nil
	r.finish()
	if len(r.Notes) != 1 || !strings.HasPrefix(r.Notes[0], "UNFAIR") {
		t.Errorf("different sizes not flagged: %q", r.Notes)
	}
}

func TestReportOutput(t *testing.T) {
	r := fakeReport()
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"https (HTTPS keep-alive)", "SKIPPED", "lua/none", "100->100", "200->150(5 err)", "NOT met", "skipped: no mruby"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	dir := t.TempDir()
	if err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	var back Report
	j, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if err := json.Unmarshal(j, &back); err != nil || len(back.Cells) != len(r.Cells) || back.Cells[0].Result.RPS != 1000 {
		t.Errorf("results.json: %v, %d cells", err, len(back.Cells))
	}
	f, _ := os.Open(filepath.Join(dir, "results.csv"))
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+len(r.Cells)+2 {
		t.Errorf("results.csv: %d rows, want header + %d cells + 2 sweep points", len(rows), len(r.Cells))
	}
	if rows[1][1] != "native" || rows[1][6] != "1000.0" {
		t.Errorf("results.csv row 1: %q", rows[1])
	}
	for _, name := range []string{"sweep.svg", "handlers.svg"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		d := xml.NewDecoder(bytes.NewReader(b))
		n := 0
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: not XML: %v", name, err)
			}
			if se, ok := tok.(xml.StartElement); ok && (se.Name.Local == "polyline" || se.Name.Local == "rect") {
				n++
			}
		}
		if n < 2 {
			t.Errorf("%s: %d lines/bars", name, n)
		}
	}
}

func TestMedian(t *testing.T) {
	ok := func(rps float64) CellResult {
		return CellResult{Name: "x", Status: StatusOK, Result: &load.Result{RPS: rps}}
	}
	m := median([]CellResult{ok(300), ok(100), ok(200)})
	if m.Result.RPS != 200 || len(m.Rounds) != 3 || m.Rounds[0] != 300 {
		t.Errorf("median of 300,100,200: %v rounds %v", m.Result.RPS, m.Rounds)
	}
	if m := median([]CellResult{ok(100), ok(200)}); m.Result.RPS != 100 {
		t.Errorf("median of two: %v, want the lower", m.Result.RPS)
	}
	if m := median([]CellResult{ok(1)}); m.Rounds != nil {
		t.Errorf("one round: rounds %v", m.Rounds)
	}
	failed := CellResult{Name: "x", Status: StatusFailed, Reason: "boom"}
	if m := median([]CellResult{ok(100), failed, ok(200)}); m.Status != StatusFailed || m.Reason != "boom" {
		t.Errorf("a failed round must fail the cell: %+v", m)
	}
	skipped := CellResult{Name: "x", Status: StatusSkipped, Reason: "root"}
	if m := median([]CellResult{skipped, skipped}); m.Status != StatusSkipped {
		t.Errorf("skipped: %+v", m)
	}
}

// TestChartsReadable: the sweep chart is wide enough for its title with a
// single panel, and handlers whose bars would be a line next to the
// in-process ones (CGI at 1/20 or less) get their own panel and scale.
func TestChartsReadable(t *testing.T) {
	r := fakeReport()
	for i := range r.Cells {
		if r.Cells[i].Handler == "cgi" {
			r.Cells[i].Result.RPS /= 40 // 2.5 and 2.25 req/s against 1000
		}
	}
	width := func(svg []byte) int {
		var w int
		fmt.Sscanf(string(svg[strings.Index(string(svg), `width="`)+len(`width="`):]), "%d", &w)
		return w
	}
	sw := r.sweepSVG()
	if w, need := width(sw), textWidth("hostd: achieved vs offered load (open loop, HTTPS keep-alive)", 14); w < need+40 {
		t.Errorf("sweep chart %d px wide, its title needs %d", w, need)
	}
	hs := string(r.handlersSVG())
	if !strings.Contains(hs, "a process per request") {
		t.Fatalf("CGI bars share the in-process scale:\n%s", hs)
	}
	// The CGI bar of mode none (2.5 req/s, the panel's tallest) is drawn tall.
	i := strings.Index(hs, "cgi none: 2 req/s")
	j := strings.LastIndex(hs[:i], `height="`)
	var hgt float64
	fmt.Sscanf(hs[j+len(`height="`):], "%f", &hgt)
	if hgt < 100 {
		t.Errorf("the CGI bar is %.1f px tall", hgt)
	}
}

// TestPeers: --peers plans the four handlers against each peer, and the
// report turns peer cells into hostd/peer ratios (table, JSON, CSV, chart).
func TestPeers(t *testing.T) {
	names := map[string]bool{}
	for _, c := range plan(false, newSelector("*/nginx,*/h2o"), true) {
		names[c.name()] = true
	}
	for _, want := range []string{"static/nginx/https", "lua/nginx/https", "mruby/h2o/https"} {
		if !names[want] || len(names) != 10 {
			t.Errorf("plan lacks %s or has others: %v", want, names)
		}
	}
	for _, c := range plan(false, nil, false) {
		if isPeer(c.mode) {
			t.Fatal("peer cells planned without --peers")
		}
	}
	r := fakeReport()
	add := func(h, m string, rps float64) {
		r.Cells = append(r.Cells, CellResult{Name: closedName(h, m, load.HTTPS), Handler: h, Mode: m, Transport: "https",
			Status: StatusOK, Result: &load.Result{OK: int64(rps), RPS: rps, Duration: time.Second}, ServerCPUPerReq: time.Duration(1e9 / rps)})
	}
	add("native", "nginx", 800)
	add("lua", "apache", 100)
	r.Targets, r.PeerRatios = nil, nil
	r.finish()
	got := map[string]Target{}
	for _, tg := range r.PeerRatios {
		got[tg.Name] = tg
	}
	if tg := got["native: hostd none / nginx"]; tg.Value != 1000.0/800 || tg.Goal != 1 || !tg.Met() {
		t.Errorf("native vs nginx: %+v", tg)
	}
	if tg := got["lua: hostd none / apache"]; tg.Value != 9.5 || tg.ByCPU < 9.49 || tg.ByCPU > 9.51 {
		t.Errorf("lua vs apache: %+v", tg)
	}
	if c := r.cell("native", "nginx", load.HTTPS); c.VsNone != 0 {
		t.Errorf("a peer cell got a hostd ratio: %v", c.VsNone)
	}
	if !strings.Contains(string(r.csv()), "peer_ratio,native,none,https,ok,,,,,,,,1.25,1.25,,,hostd none / nginx") {
		t.Errorf("csv lacks the ratio row:\n%s", r.csv())
	}
	var b bytes.Buffer
	r.WriteTable(&b)
	if !strings.Contains(b.String(), "native: hostd none / nginx") {
		t.Errorf("table lacks the ratio:\n%s", b.String())
	}
	if svg := string(r.handlersSVG()); !strings.Contains(svg, peerColor["nginx"]) || !strings.Contains(svg, ">nginx</text>") {
		t.Error("handler chart lacks nginx's bars")
	}
}

// TestWriteConfig: the configuration of every mode loads, with each
// tenant's hooks, CGI interpreter, native response and the overload
// limits off.
func TestWriteConfig(t *testing.T) {
	s := &site{dir: t.TempDir(), tenants: 2, phpCGI: "/usr/bin/php-cgi", mruby: true, root: sandbox.Privileged()}
	if err := s.writeTenants(); err != nil {
		t.Fatal(err)
	}
	modes := []string{"none"}
	if s.root {
		modes = append(modes, "thread") // a switching mode needs the tenants' uids
	}
	for _, mode := range modes {
		main, err := s.writeConfig(mode)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := tenant.Load(main)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if cfg.Server.AcceptRate != -1 || cfg.Server.MaxHandshakes != -1 || len(cfg.VHosts) != 4 {
			t.Fatalf("%s: accept_rate %d max_handshakes %d, %d vhosts", mode, cfg.Server.AcceptRate, cfg.Server.MaxHandshakes, len(cfg.VHosts))
		}
		byName := map[string]*tenant.VHost{}
		for _, vh := range cfg.VHosts {
			byName[vh.ServerName] = vh
		}
		v := byName[s.tenantName(0)]
		if v == nil {
			t.Fatalf("%s: no vhost %s", mode, s.tenantName(0))
		}
		if v.Sandbox != mode || !v.AllowHTTP || len(v.Hooks) != 2 || v.CGI.Interpreters[".phpcgi"] != s.phpCGI ||
			len(v.Respond) != 1 || v.Respond[0].Body != Hello || v.RunAsServer != (mode == "none") {
			t.Errorf("%s: %+v", mode, v)
		}
		// The cached twin: the same root and user, static only, the cache on.
		c := byName[s.cachedName(0)]
		if c == nil || c.Root != v.Root || c.UID != v.UID || c.Limits.OpenFileCacheValid.Std() != OpenFileCacheValid ||
			len(c.Hooks) != 0 || c.CGI.Enabled || v.Limits.OpenFileCacheValid != 0 {
			t.Errorf("%s: cached twin %+v", mode, c)
		}
	}
}
