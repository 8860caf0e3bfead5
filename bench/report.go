package bench

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hostd/hostd/bench/load"
)

// Cell statuses.
const (
	StatusOK      = "ok"
	StatusSkipped = "skipped"
	StatusFailed  = "failed"
)

// Report is the outcome of Run; it is what results.json holds.
type Report struct {
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Machine Machine       `json:"machine"`
	Options ReportOptions `json:"options"`
	// Dir is the kept temp dir (Options.Keep).
	Dir    string        `json:"dir,omitempty"`
	Cells  []CellResult  `json:"cells"`
	Sweeps []SweepResult `json:"sweeps"`
	// Targets are the ratios, computed from this run.
	Targets []Target `json:"targets"`
	// PeerRatios are hostd's requests/s (and per CPU-second) over each
	// peer's in the same cells (--peers); they are among Targets too.
	PeerRatios []Target `json:"peer_ratios,omitempty"`
	// Notes are remarks on fairness and the setup.
	Notes []string `json:"notes,omitempty"`

	capacity map[string]float64
}

// Machine is where the run happened.
type Machine struct {
	CPUModel         string `json:"cpu_model"`
	NumCPU           int    `json:"num_cpu"`
	Kernel           string `json:"kernel"`
	GoVersion        string `json:"go_version"`
	Hostd            string `json:"hostd"`
	HostdVersion     string `json:"hostd_version"`
	Root             bool   `json:"root"`
	ServerCPUs       []int  `json:"server_cpus"`
	LoadCPUs         []int  `json:"load_cpus"`
	ServerGOMAXPROCS int    `json:"server_gomaxprocs"`
	LoadGOMAXPROCS   int    `json:"load_gomaxprocs"`
	// LoadAvg is /proc/loadavg at the start: other work on the machine
	// skews the numbers.
	LoadAvg string   `json:"loadavg,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// ReportOptions are the options a report was made with.
type ReportOptions struct {
	Quick         bool          `json:"quick"`
	Tenants       int           `json:"tenants"`
	Cells         string        `json:"cells,omitempty"`
	Duration      time.Duration `json:"duration_ns"`
	Warmup        time.Duration `json:"warmup_ns"`
	Conns         int           `json:"conns"`
	Rates         []float64     `json:"rates,omitempty"`
	SweepDuration time.Duration `json:"sweep_duration_ns"`
	SweepConns    int           `json:"sweep_conns"`
	Repeat        int           `json:"repeat"`
}

func reportOptions(o Options) ReportOptions {
	return ReportOptions{Quick: o.Quick, Tenants: o.Tenants, Cells: o.Cells, Duration: o.Duration, Warmup: o.Warmup,
		Conns: o.Conns, Rates: o.Rates, SweepDuration: o.SweepDuration, SweepConns: o.SweepConns, Repeat: o.Repeat}
}

func machine(ctx context.Context, hostd string) Machine {
	m := Machine{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), Hostd: hostd, Root: os.Geteuid() == 0}
	m.CPUModel, m.Kernel = sysInfo()
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	if out, err := exec.CommandContext(ctx, hostd, "version").Output(); err == nil {
		m.HostdVersion = strings.TrimSpace(string(out))
	}
	return m
}

// CellResult is one closed-loop cell.
type CellResult struct {
	Name      string `json:"name"`
	Handler   string `json:"handler"`
	Mode      string `json:"mode"`
	Transport string `json:"transport"`
	Status    string `json:"status"`
	Reason    string `json:"reason,omitempty"`
	// Result is the load generator's measurement (nil unless it ran).
	Result *load.Result `json:"result,omitempty"`
	// ResponseBytes is the size of one response (head and body).
	ResponseBytes int `json:"response_bytes,omitempty"`
	// ServerCPUPerReq is the server's CPU time (CGI children included)
	// per response.
	ServerCPUPerReq time.Duration `json:"server_cpu_per_req_ns,omitempty"`
	// VsNone is RPS / RPS of the same handler and transport in mode none;
	// VsNative is RPS / RPS of the native hello in the same mode and
	// transport (0: not available).
	VsNone   float64 `json:"vs_none,omitempty"`
	VsNative float64 `json:"vs_native,omitempty"`
	// OtherCPU is the share of the server's CPUs used by other processes
	// during the measurement (0..1; only when pinned): above ~0.1 the
	// cell's numbers are skewed by other work on the machine.
	OtherCPU float64 `json:"other_cpu,omitempty"`
	// Rounds are the requests/s of every round when Options.Repeat > 1;
	// the cell reports the median one.
	Rounds []float64 `json:"rounds,omitempty"`
	// Profile is the perf profile's file and top symbols (Options.PerfDir).
	Profile string `json:"profile,omitempty"`
}

// SweepResult is one open-loop rate sweep.
type SweepResult struct {
	Name      string        `json:"name"`
	Handler   string        `json:"handler"`
	Mode      string        `json:"mode"`
	Transport string        `json:"transport"`
	Status    string        `json:"status"`
	Reason    string        `json:"reason,omitempty"`
	Points    []load.Result `json:"points,omitempty"`
}

// Target is one of the ratios.
type Target struct {
	Name string `json:"name"`
	// Value is the ratio of requests/s.
	Value float64 `json:"value"`
	// ByCPU is the same ratio computed from the server's CPU time per
	// request (requests per CPU-second), which other work on the machine
	// skews much less than requests/s (0: not measured).
	ByCPU float64 `json:"by_cpu,omitempty"`
	// Goal is the wanted minimum (0: none, reported only).
	Goal float64 `json:"goal,omitempty"`
	Note string  `json:"note,omitempty"`
}

// Met reports whether the target has a goal and reaches it.
func (t Target) Met() bool { return t.Goal == 0 || t.Value >= t.Goal }

// Failed lists the failed cells and sweeps.
func (r *Report) Failed() []string {
	var f []string
	for _, c := range r.Cells {
		if c.Status == StatusFailed {
			f = append(f, c.Name+": "+c.Reason)
		}
	}
	for _, s := range r.Sweeps {
		if s.Status == StatusFailed {
			f = append(f, s.Name+": "+s.Reason)
		}
	}
	return f
}

func (r *Report) cell(h, mode string, tr load.Transport) *CellResult {
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Handler == h && c.Mode == mode && c.Transport == string(tr) && c.Status == StatusOK {
			return c
		}
	}
	return nil
}

func (r *Report) ratio(h1, m1, h2, m2 string, tr load.Transport) (float64, bool) {
	a, b := r.cell(h1, m1, tr), r.cell(h2, m2, tr)
	if a == nil || b == nil || b.Result.RPS == 0 {
		return 0, false
	}
	return a.Result.RPS / b.Result.RPS, true
}

// finish computes the ratios, the targets and the fairness notes.
func (r *Report) finish() {
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Status != StatusOK || isPeer(c.Mode) {
			continue
		}
		tr := load.Transport(c.Transport)
		if v, ok := r.ratio(c.Handler, c.Mode, c.Handler, "none", tr); ok {
			c.VsNone = v
		}
		nm := c.Mode
		if nm == "suexec" {
			nm = "none" // the native handler has no suexec cell: it runs as the server there
		}
		if v, ok := r.ratio(c.Handler, c.Mode, "native", nm, tr); ok {
			c.VsNative = v
		}
	}
	tr := load.HTTPS
	add := func(name string, goal float64, note string, h1, m1, h2, m2 string) {
		if v, ok := r.ratio(h1, m1, h2, m2, tr); ok {
			t := Target{Name: name, Value: v, Goal: goal, Note: note}
			if a, b := r.cell(h1, m1, tr), r.cell(h2, m2, tr); a.ServerCPUPerReq > 0 && b.ServerCPUPerReq > 0 {
				t.ByCPU = float64(b.ServerCPUPerReq) / float64(a.ServerCPUPerReq)
			}
			r.Targets = append(r.Targets, t)
		}
	}
	for _, h := range []string{"static", "native", "lua", "mruby"} {
		add(h+": uring / none", 0.95, "the kernel-checked file gate's cost", h, "uring", h, "none")
	}
	for _, m := range []string{"none", "uring", "thread"} {
		add("static: cached / uncached ("+m+")", 0, "open_file_cache_valid = 1s vs a gate open per request", "static-cached", m, "static", m)
	}
	add("lua: thread / none", 0.95, "the sandbox's cost for an in-process hook", "lua", "thread", "lua", "none")
	add("lua: uring / thread", 0, "a personality per file operation instead of a thread hand-off", "lua", "uring", "lua", "thread")
	add("lua: thread-per-request / thread", 0, "a new locked thread per request", "lua", "thread-per-request", "lua", "thread")
	add("lua: inline / thread", 0, "switching the connection's own thread", "lua", "inline", "lua", "thread")
	for _, m := range []string{"none", "uring", "thread", "thread-per-request", "inline"} {
		add("lua / native ("+m+")", 0.9, "", "lua", m, "native", m)
		add("mruby / native ("+m+")", 0.9, "", "mruby", m, "native", m)
	}
	add("cgi: suexec / none", 0, "suEXEC-style CGI children vs unswitched", "cgi", "suexec", "cgi", "none")
	add("cgi: thread / none", 0, "", "cgi", "thread", "cgi", "none")
	add("php-cgi: suexec / none", 0, "", "php-cgi", "suexec", "php-cgi", "none")
	for _, m := range []string{"none", "suexec", "thread", "inline"} {
		add("php hello: php-fpm / php-cgi ("+m+")", 20, "the tenant's FastCGI pool vs a php-cgi process per request", "php-fpm", m, "php-cgi", m)
		add("phpinfo: php-fpm / php-cgi ("+m+")", 0, "", "phpinfo-fpm", m, "phpinfo-cgi", m)
	}

	r.peerTargets() // peers.go

	// Fairness: the hello responses must be the same size.
	sizes := map[int][]string{}
	for _, c := range r.Cells {
		if c.Status == StatusOK && c.Transport == string(load.HTTPS) && c.Mode == "none" {
			if h, ok := handlerByName(c.Handler); ok && h.Hello {
				sizes[c.ResponseBytes] = append(sizes[c.ResponseBytes], c.Handler)
			}
		}
	}
	switch {
	case len(sizes) == 1:
		for n, hs := range sizes {
			r.Notes = append(r.Notes, fmt.Sprintf("hello responses byte-identical in size: %d bytes (%s)", n, strings.Join(hs, ", ")))
		}
	case len(sizes) > 1:
		var parts []string
		for n, hs := range sizes {
			parts = append(parts, fmt.Sprintf("%d bytes: %s", n, strings.Join(hs, ", ")))
		}
		r.Notes = append(r.Notes, "UNFAIR: hello responses differ in size: "+strings.Join(parts, "; "))
	}
}

var transportDesc = map[string]string{
	string(load.HTTP1):       "HTTP/1.1 keep-alive",
	string(load.HTTPS):       "HTTPS keep-alive",
	string(load.HTTPSNew):    "HTTPS, new connection per request (full handshake)",
	string(load.HTTPSResume): "HTTPS, new connection per request with session resumption",
}

func ms(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < 10*time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64)
	default:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64)
	}
}

func ratioStr(v float64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// WriteTable writes the terminal report.
func (r *Report) WriteTable(w io.Writer) error {
	m := r.Machine
	fmt.Fprintf(w, "hostd bench: %d tenants, %d connections, %s per cell after %s warm-up, HTTP/1.1",
		r.Options.Tenants, r.Options.Conns, r.Options.Duration, r.Options.Warmup)
	if r.Options.Repeat > 1 {
		fmt.Fprintf(w, ", median of %d rounds", r.Options.Repeat)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "machine: %s, %d CPUs, %s, %s; server CPUs %v (GOMAXPROCS %d), load generator CPUs %v (GOMAXPROCS %d); root=%v\n",
		m.CPUModel, m.NumCPU, m.Kernel, m.GoVersion, m.ServerCPUs, m.ServerGOMAXPROCS, m.LoadCPUs, m.LoadGOMAXPROCS, m.Root)
	if m.LoadAvg != "" {
		fmt.Fprintf(w, "load average before the run: %s (other work on the machine skews the numbers)\n", m.LoadAvg)
	}
	if r.Dir != "" {
		fmt.Fprintf(w, "setup kept in %s\n", r.Dir)
	}
	if m.HostdVersion != "" {
		fmt.Fprintf(w, "server: %s (%s)\n", m.Hostd, m.HostdVersion)
	}
	for _, tr := range load.Transports {
		var rows []CellResult
		for _, c := range r.Cells {
			if c.Transport == string(tr) {
				rows = append(rows, c)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s)\n", tr, transportDesc[string(tr)])
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "handler\tmode\treq/s\tp50 ms\tp90 ms\tp99 ms\terrors\tx none\tx native\tbytes\tsrv CPU µs/req\tother %\t\n")
		for _, c := range rows {
			if c.Status != StatusOK {
				reason := c.Reason
				if c.Status == StatusSkipped {
					reason, _, _ = strings.Cut(reason, ":") // the full reason is printed below
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t\t\t\t\t\t\t\t\t%s\n", c.Handler, c.Mode, strings.ToUpper(c.Status), shorten(reason, 90))
				continue
			}
			lr := c.Result
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%.0f\t%.0f\t\n", c.Handler, c.Mode, lr.RPS,
				ms(lr.Latency.P50), ms(lr.Latency.P90), ms(lr.Latency.P99), lr.ErrorCount(),
				ratioStr(c.VsNone), ratioStr(c.VsNative), c.ResponseBytes, float64(c.ServerCPUPerReq)/1e3, 100*c.OtherCPU)
		}
		tw.Flush()
	}
	if len(r.Sweeps) > 0 {
		fmt.Fprintf(w, "\nrate sweep (open loop, HTTPS keep-alive, up to %d connections, %s per rate): achieved responses/s at offered req/s\n",
			r.Options.SweepConns, r.Options.SweepDuration)
		for _, s := range r.Sweeps {
			if s.Status != StatusOK {
				fmt.Fprintf(w, "  %-28s %s: %s\n", s.Handler+"/"+s.Mode, strings.ToUpper(s.Status), shorten(s.Reason, 100))
				continue
			}
			var b strings.Builder
			for _, p := range s.Points {
				fmt.Fprintf(&b, "  %.0f->%.0f", p.Offered, p.RPS)
				if n := p.ErrorCount(); n > 0 {
					fmt.Fprintf(&b, "(%d err)", n)
				}
			}
			fmt.Fprintf(w, "  %-28s%s\n", s.Handler+"/"+s.Mode, b.String())
		}
	}
	if len(r.Targets) > 0 {
		fmt.Fprintf(w, "\ntargets over HTTPS keep-alive, one run: ratio of req/s, and of requests per server CPU-second (less skewed by other work)\n")
		for _, t := range r.Targets {
			mark := ""
			if t.Goal > 0 {
				mark = fmt.Sprintf("(goal >= %.2f: %s)", t.Goal, map[bool]string{true: "met", false: "NOT met"}[t.Met()])
			}
			fmt.Fprintf(w, "  %-36s req/s %5.2f  per CPU %5s  %s\n", t.Name, t.Value, ratioStr(t.ByCPU), mark)
		}
	}
	var noisy []string
	for _, c := range r.Cells {
		if c.Status == StatusOK && c.OtherCPU > 0.1 {
			noisy = append(noisy, fmt.Sprintf("%s (%.0f%%)", c.Name, 100*c.OtherCPU))
		}
	}
	if len(noisy) > 0 {
		fmt.Fprintf(w, "note: other processes used more than 10%% of the server's CPU during %d cells: their numbers are skewed (rerun them, or use --repeat 3): %s\n",
			len(noisy), shorten(strings.Join(noisy, ", "), 400))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	var skipped int
	for _, c := range r.Cells {
		if c.Status == StatusSkipped {
			skipped++
		}
	}
	for _, s := range r.Sweeps {
		if s.Status == StatusSkipped {
			skipped++
		}
	}
	failed := r.Failed()
	fmt.Fprintf(w, "\n%d cells, %d sweeps, %d skipped, %d failed, %s\n", len(r.Cells), len(r.Sweeps), skipped, len(failed), r.Elapsed.Round(time.Second))
	if skipped > 0 {
		reasons := map[string]bool{}
		for _, c := range r.Cells {
			if c.Status == StatusSkipped && !reasons[c.Reason] {
				reasons[c.Reason] = true
				fmt.Fprintf(w, "skipped: %s\n", c.Reason)
			}
		}
	}
	for _, f := range failed {
		fmt.Fprintf(w, "FAILED %s\n", f)
	}
	return nil
}

func shorten(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n-3] + "..."
	}
	return s
}

// WriteFiles writes table.txt (the terminal table), results.json,
// results.csv, sweep.svg and handlers.svg into dir (created if needed).
func (r *Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	j, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	var table strings.Builder
	r.WriteTable(&table)
	files := map[string][]byte{
		"table.txt":    []byte(table.String()),
		"results.json": append(j, '\n'),
		"results.csv":  r.csv(),
		"sweep.svg":    r.sweepSVG(),
		"handlers.svg": r.handlersSVG(),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

// csv has one row per closed-loop cell and one per sweep point.
func (r *Report) csv() []byte {
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write([]string{"kind", "handler", "mode", "transport", "status", "offered_rps", "rps", "ok", "errors",
		"p50_ms", "p90_ms", "p99_ms", "vs_none", "vs_native", "response_bytes", "server_cpu_us_per_req", "reason"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	d := func(v time.Duration) string { return strconv.FormatFloat(float64(v)/1e6, 'f', 3, 64) }
	for _, c := range r.Cells {
		row := []string{"closed", c.Handler, c.Mode, c.Transport, c.Status, "", "", "", "", "", "", "", "", "", "", "", c.Reason}
		if lr := c.Result; lr != nil {
			row[6], row[7], row[8] = strconv.FormatFloat(lr.RPS, 'f', 1, 64), strconv.FormatInt(lr.OK, 10), strconv.FormatInt(lr.ErrorCount(), 10)
			row[9], row[10], row[11] = d(lr.Latency.P50), d(lr.Latency.P90), d(lr.Latency.P99)
			row[12], row[13] = f(round3(c.VsNone)), f(round3(c.VsNative))
			row[14], row[15] = strconv.Itoa(c.ResponseBytes), strconv.FormatFloat(float64(c.ServerCPUPerReq)/1e3, 'f', 1, 64)
		}
		w.Write(row)
	}
	for _, t := range r.PeerRatios {
		// hostd/peer: vs_none holds the requests/s ratio, vs_native the
		// ratio per server CPU-second.
		h, rest, _ := strings.Cut(t.Name, ": hostd ")
		mode, peer, _ := strings.Cut(rest, " / ")
		w.Write([]string{"peer_ratio", h, mode, string(load.HTTPS), StatusOK, "", "", "", "", "", "", "", f(round3(t.Value)), f(round3(t.ByCPU)), "", "", "hostd " + mode + " / " + peer})
	}
	for _, s := range r.Sweeps {
		if s.Status != StatusOK {
			w.Write([]string{"sweep", s.Handler, s.Mode, s.Transport, s.Status, "", "", "", "", "", "", "", "", "", "", "", s.Reason})
			continue
		}
		for _, p := range s.Points {
			w.Write([]string{"sweep", s.Handler, s.Mode, s.Transport, s.Status, f(p.Offered), strconv.FormatFloat(p.RPS, 'f', 1, 64),
				strconv.FormatInt(p.OK, 10), strconv.FormatInt(p.ErrorCount(), 10),
				d(p.Latency.P50), d(p.Latency.P90), d(p.Latency.P99), "", "", "", "", ""})
		}
	}
	w.Flush()
	return []byte(b.String())
}

func round3(v float64) float64 { return float64(int(v*1000+0.5)) / 1000 }
