package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hostd/hostd/bench/load"
	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/tenant"
)

// Options selects what Run measures. The zero value runs the default
// matrix against the running executable.
type Options struct {
	// Hostd is the hostd binary to start as the server (default: the
	// running executable, so `hostd bench` measures itself).
	Hostd string
	// Tenants is the number of tenants (default 2); connections are
	// spread over them.
	Tenants int
	// Quick runs the short matrix (under a minute on 2 cores): the full
	// handler x mode grid over HTTPS keep-alive only, a few cells on the
	// other transports, a short Lua sweep.
	Quick bool
	// Cells selects cells by name patterns, comma-separated: path.Match
	// globs over "handler/mode/transport" or "sweep/handler/mode", or
	// their leading segments ("lua", "*/inline", "sweep"). Empty: all.
	Cells string
	// Duration is measured per closed-loop cell (default 1.5s, quick
	// 0.5s), after Warmup (default 0.3s, quick 0.15s).
	Duration time.Duration
	Warmup   time.Duration
	// Conns is the closed loop's concurrent connections (default 32).
	Conns int
	// Rates are the open-loop offered rates (requests/s). Empty: derived
	// per handler from its measured closed-loop capacity.
	Rates []float64
	// SweepDuration is measured per rate (default 1s, quick 0.4s).
	SweepDuration time.Duration
	// SweepConns is the open loop's connection budget (default 64).
	SweepConns int
	// Repeat runs every closed-loop cell this many times, in rounds over
	// the whole grid, and reports the run with the median requests/s
	// (default 1). Use 3 or more on a machine with other work on it.
	Repeat int
	// NoPin turns CPU pinning off.
	NoPin bool
	// Keep keeps the temp dir (its path is in the report).
	Keep bool
	// PerfDir, when set, records a `perf record -g` profile of the server
	// during every closed-loop cell into PerfDir/<cell>.perf.data and
	// writes the top symbols to PerfDir/<cell>.perf.txt (needs perf).
	PerfDir string
	// Peers runs the static, native, Lua and mruby cells over HTTPS
	// keep-alive against nginx, h2o and Apache too, where installed
	// (peers.go), and reports hostd/peer ratios.
	Peers bool
	// Progress receives a progress line per cell (nil: none).
	Progress io.Writer
	// Logger receives debug details (nil: discarded).
	Logger *slog.Logger
}

func (o *Options) defaults() error {
	if o.Hostd == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("bench: hostd binary: %w", err)
		}
		o.Hostd = exe
	}
	if o.Tenants <= 0 {
		o.Tenants = 2
	}
	if o.Duration <= 0 {
		o.Duration = 1500 * time.Millisecond
		if o.Quick {
			o.Duration = 500 * time.Millisecond
		}
	}
	if o.Warmup <= 0 {
		o.Warmup = 300 * time.Millisecond
		if o.Quick {
			o.Warmup = 150 * time.Millisecond
		}
	}
	if o.Conns <= 0 {
		o.Conns = 32
	}
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	if o.SweepDuration <= 0 {
		o.SweepDuration = time.Second
		if o.Quick {
			o.SweepDuration = 400 * time.Millisecond
		}
	}
	if o.SweepConns <= 0 {
		o.SweepConns = 64
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return nil
}

// sweepFractions multiply a handler's capacity into offered rates.
func sweepFractions(quick bool) []float64 {
	if quick {
		return []float64{0.5, 0.9, 1.2, 1.6}
	}
	return []float64{0.25, 0.5, 0.75, 0.9, 1.05, 1.25, 1.5, 2}
}

// Run builds the setup, runs the selected cells and returns the report.
// It pins this process's threads to the load generator's CPUs while it
// runs. Cells that cannot run are reported as skipped with the reason; a
// cell whose server or requests fail is reported as failed. The error is
// for the run as a whole (setup, cancellation).
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	rep := &Report{Started: time.Now().UTC(), Options: reportOptions(opts)}
	rep.Machine = machine(ctx, opts.Hostd)
	if _, err := os.Stat(opts.Hostd); err != nil {
		return nil, fmt.Errorf("bench: hostd binary: %w", err)
	}

	var serverCPUs, loadCPUs []int
	if !opts.NoPin {
		serverCPUs, loadCPUs = splitCPUs()
	}
	if len(loadCPUs) > 0 {
		restore, err := load.PinProcess(loadCPUs)
		if err != nil {
			opts.Logger.Warn("pinning the load generator", "err", err)
			serverCPUs, loadCPUs = nil, nil
		} else {
			defer restore()
			old := runtime.GOMAXPROCS(len(loadCPUs))
			defer runtime.GOMAXPROCS(old)
		}
	}
	rep.Machine.ServerCPUs, rep.Machine.LoadCPUs = serverCPUs, loadCPUs
	rep.Machine.LoadGOMAXPROCS = runtime.GOMAXPROCS(0)
	rep.Machine.ServerGOMAXPROCS = len(serverCPUs)
	if rep.Machine.ServerGOMAXPROCS == 0 {
		rep.Machine.ServerGOMAXPROCS = runtime.NumCPU()
	}
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		rep.Machine.Notes = append(rep.Machine.Notes, "GOMAXPROCS="+v+" in the environment applies to the server too")
	}

	dir, err := os.MkdirTemp("", "hostd-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if opts.Keep {
		rep.Dir = dir
	} else {
		defer os.RemoveAll(dir)
	}
	st := &site{dir: dir, tenants: opts.Tenants, root: os.Geteuid() == 0, mruby: true}
	if p, err := exec.LookPath("php-cgi"); err == nil {
		st.phpCGI = p
	}
	if _, err := os.Stat(tenant.DefaultPHPFPM); err == nil && st.root {
		st.phpFPM = true
	}
	if err := st.writeTenants(); err != nil {
		return nil, fmt.Errorf("bench: setup: %w", err)
	}
	skips, err := st.probe(ctx, opts.Hostd)
	if err != nil {
		return nil, err
	}

	r := &runner{opts: opts, site: st, serverCPUs: serverCPUs, skips: skips, rep: rep, configs: map[string]string{}}
	if opts.Peers {
		r.peers, r.psite = probePeers(ctx), st.peerSite()
	}
	cells := plan(opts.Quick, newSelector(opts.Cells), opts.Peers)
	if len(cells) == 0 {
		return nil, fmt.Errorf("bench: --cells %q selects no cell", opts.Cells)
	}
	// Closed-loop cells run in rounds (Options.Repeat), so a burst of
	// other work on the machine hits one round, not one mode; the sweeps
	// come last, as their rates derive from the closed-loop results.
	var seq, sweepCells []plannedCell
	for range opts.Repeat {
		for _, c := range cells {
			if !c.sweep {
				seq = append(seq, c)
			}
		}
	}
	for _, c := range cells {
		if c.sweep {
			sweepCells = append(sweepCells, c)
		}
	}
	seq = append(seq, sweepCells...)
	r.total = len(seq)
	r.start = time.Now()
	runs := map[string][]CellResult{}
	var order []string
	finalized := false
	finalize := func() {
		if finalized {
			return
		}
		finalized = true
		for _, name := range order {
			rep.Cells = append(rep.Cells, median(runs[name]))
		}
	}
	for i, c := range seq {
		r.remaining = seq[i:]
		if err := ctx.Err(); err != nil {
			finalize()
			return rep, err
		}
		if c.sweep {
			finalize()
			rep.Sweeps = append(rep.Sweeps, r.runSweep(ctx, i, c))
			continue
		}
		name := c.name()
		if _, ok := runs[name]; !ok {
			order = append(order, name)
		}
		runs[name] = append(runs[name], r.runClosed(ctx, i, c))
	}
	finalize()
	if isTerminal(opts.Progress) {
		fmt.Fprintf(opts.Progress, "\r%-100s\r", "")
	}
	rep.Elapsed = time.Since(r.start).Round(time.Millisecond)
	rep.finish()
	return rep, nil
}

// probe finds what this machine and binary can run: a mode or handler
// that cannot is mapped to the reason.
func (s *site) probe(ctx context.Context, hostd string) (map[string]string, error) {
	skips := map[string]string{}
	if !s.root {
		for _, m := range Modes {
			if m != "none" {
				skips["mode:"+m] = "needs root: the sandbox switches threads/CGI children to the tenants' uids (CAP_SETUID, CAP_SETGID)"
			}
		}
	}
	if err := sandbox.ProbeURing(); err != nil && s.root {
		skips["mode:uring"] = "io_uring is not usable here: " + err.Error()
	}
	if s.phpCGI == "" {
		skips["handler:php-cgi"] = "php-cgi is not installed (apt-get install php-cgi)"
		skips["handler:phpinfo-cgi"] = skips["handler:php-cgi"]
	}
	switch {
	case !s.root:
		skips["handler:php-fpm"] = "needs root: each tenant's php-fpm pool runs with the tenant's uid"
	case !s.phpFPM:
		skips["handler:php-fpm"] = tenant.DefaultPHPFPM + " is not installed (apt-get install " + tenant.PHPFPMPackage + ")"
	}
	if why, ok := skips["handler:php-fpm"]; ok {
		skips["handler:phpinfo-fpm"] = why
	}
	check := func() (string, error) {
		cfg, err := s.writeConfig("none")
		if err != nil {
			return "", err
		}
		out, err := exec.CommandContext(ctx, hostd, "check", "--config", cfg).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	out, err := check()
	if err != nil && s.mruby {
		// A binary built with -tags nomruby rejects .rb hooks.
		s.mruby = false
		if _, err2 := check(); err2 == nil {
			skips["handler:mruby"] = "this hostd cannot load mruby hooks: " + firstLine(out)
			return skips, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("bench: hostd check of the generated configuration failed: %v: %s", err, out)
	}
	return skips, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// runner runs cells one after the other.
type runner struct {
	opts       Options
	site       *site
	serverCPUs []int
	skips      map[string]string
	rep        *Report
	configs    map[string]string // mode -> main file
	total      int
	start      time.Time
	remaining  []plannedCell
	overhead   time.Duration // measured per-cell overhead (server start, probe)
	overheadN  int
	peers      map[string]*peerSupport // Options.Peers: what is installed (peers.go)
	psite      *peerSite
}

func (r *runner) skipReason(c plannedCell) string {
	if isPeer(c.mode) {
		return r.peers[c.mode].skip(c.handler.Name)
	}
	if why, ok := r.skips["mode:"+c.mode]; ok {
		return why
	}
	if why, ok := r.skips["handler:"+c.handler.Name]; ok {
		return why
	}
	return ""
}

// cellTime is the planned load time of a cell.
func (r *runner) cellTime(c plannedCell) time.Duration {
	if c.sweep {
		n := len(r.opts.Rates)
		if n == 0 {
			n = len(sweepFractions(r.opts.Quick))
		}
		return time.Duration(n) * (r.opts.SweepDuration + r.opts.Warmup/2)
	}
	return r.opts.Warmup + max(r.opts.Duration, c.handler.MinDuration)
}

func (r *runner) progress(i int, c plannedCell) {
	var eta time.Duration
	oh := 300 * time.Millisecond
	if r.overheadN > 0 {
		oh = r.overhead / time.Duration(r.overheadN)
	}
	for _, p := range r.remaining {
		if r.skipReason(p) == "" {
			eta += r.cellTime(p) + oh
		}
	}
	line := fmt.Sprintf("[%d/%d] %-34s elapsed %s  ETA %s", i+1, r.total, c.name(),
		time.Since(r.start).Round(time.Second), eta.Round(time.Second))
	if isTerminal(r.opts.Progress) {
		fmt.Fprintf(r.opts.Progress, "\r%-100s", line)
	} else {
		fmt.Fprintln(r.opts.Progress, line)
	}
}

// serve starts the server for mode (writing its configuration once).
func (r *runner) serve(ctx context.Context, mode string) (*server, error) {
	if isPeer(mode) {
		return r.psite.startPeer(ctx, mode, r.peers[mode].bin, r.serverCPUs)
	}
	cfg, ok := r.configs[mode]
	if !ok {
		var err error
		if cfg, err = r.site.writeConfig(mode); err != nil {
			return nil, err
		}
		r.configs[mode] = cfg
	}
	return startServer(ctx, r.opts.Hostd, cfg, r.serverCPUs)
}

func (r *runner) target(h Handler, tr load.Transport, s *server) load.Target {
	t := load.Target{Transport: tr, BodyLen: h.BodyLen, Timeout: 5 * time.Second}
	scheme, addr := "https", s.httpsAddr
	if tr == load.HTTP1 {
		scheme, addr = "http", s.httpAddr
	}
	_, port, _ := net.SplitHostPort(addr)
	for i := range r.site.tenants {
		t.URLs = append(t.URLs, scheme+"://"+r.site.hostName(h, i)+":"+port+h.Path)
	}
	t.Addr = addr
	return t
}

// startCell starts the server for c and checks the handler answers
// correctly on every tenant; it returns the response size.
func (r *runner) startCell(ctx context.Context, c plannedCell) (*server, int, error) {
	t0 := time.Now()
	s, err := r.serve(ctx, c.mode)
	if err != nil {
		return nil, 0, err
	}
	size := 0
	for i := range r.site.tenants {
		n, err := checkResponse(s.httpAddr, r.site.hostName(c.handler, i), c.handler)
		if err != nil {
			s.stop()
			return nil, 0, fmt.Errorf("%s: %w (server log: %s)", r.site.hostName(c.handler, i), err, s.tail())
		}
		size = n
	}
	r.overhead += time.Since(t0)
	r.overheadN++
	return s, size, nil
}

// checkResponse requests h once over plain HTTP and returns the size of
// the response as sent (status line, headers and body), checking the
// status and, for the hello handlers, the body.
func checkResponse(addr, host string, h Handler) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// Keep-alive, like the measured requests: no Connection header in the
	// response.
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: hostd-bench\r\n\r\n", h.Path, host); err != nil {
		return 0, err
	}
	var raw bytes.Buffer
	resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(c, &raw)), nil)
	if err != nil {
		return 0, err
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: status %d: %.200q", h.Path, resp.StatusCode, body)
	}
	if h.Hello && string(body) != Hello {
		return 0, fmt.Errorf("GET %s: body %.100q, want %q", h.Path, body, Hello)
	}
	if h.BodyLen >= 0 && len(body) != h.BodyLen {
		return 0, fmt.Errorf("GET %s: body of %d bytes, want %d", h.Path, len(body), h.BodyLen)
	}
	// The bufio.Reader may have read ahead of the response only if the
	// server sent more than one response; raw holds exactly what arrived.
	return raw.Len(), nil
}

func (r *runner) runClosed(ctx context.Context, i int, c plannedCell) CellResult {
	res := CellResult{Name: c.name(), Handler: c.handler.Name, Mode: c.mode, Transport: string(c.transport), Status: StatusOK}
	if why := r.skipReason(c); why != "" {
		res.Status, res.Reason = StatusSkipped, why
		return res
	}
	r.progress(i, c)
	s, size, err := r.startCell(ctx, c)
	if err != nil {
		res.Status, res.Reason = StatusFailed, err.Error()
		return res
	}
	defer s.stop()
	res.ResponseBytes = size
	cpu0, _ := load.TreeTicks(s.pid())
	busy0, busyOK := cpuBusy(r.serverCPUs)
	t0 := time.Now()
	conns, dur := r.opts.Conns, max(r.opts.Duration, c.handler.MinDuration)
	if c.handler.MaxConns > 0 {
		conns = min(conns, c.handler.MaxConns)
	}
	var prof *perfRecord
	if r.opts.PerfDir != "" {
		prof = startPerf(ctx, r.opts.PerfDir, c.name(), s.pid(), r.opts.Warmup+dur)
	}
	lr, err := load.Closed(ctx, r.target(c.handler, c.transport, s), conns, r.opts.Warmup, dur)
	cpu1, cpuErr := load.TreeTicks(s.pid())
	ok := cpuErr == nil
	busy1, _ := cpuBusy(r.serverCPUs)
	if elapsed := time.Since(t0).Seconds(); busyOK && ok && elapsed > 0 {
		// CPU time on the server's CPUs that was not the server's (or its
		// CGI children's): other work on the machine competing with it.
		other := float64((busy1-busy0)-(cpu1-cpu0)) / load.TicksPerSecond
		res.OtherCPU = max(0, other/(elapsed*float64(len(r.serverCPUs))))
	}
	if prof != nil {
		res.Profile = prof.finish(ctx)
	}
	if err != nil {
		res.Status, res.Reason = StatusFailed, err.Error()
		return res
	}
	res.Result = &lr
	if ok && lr.OK > 0 {
		// Warm-up CPU included: spread over the warm-up requests too.
		total := float64(cpu1-cpu0) / load.TicksPerSecond
		reqs := float64(lr.OK) * (r.opts.Warmup + dur).Seconds() / dur.Seconds()
		res.ServerCPUPerReq = time.Duration(total / reqs * float64(time.Second))
	}
	res.judge(s)
	return res
}

// judge marks a cell failed when nothing succeeded, more than 1% of the
// requests failed, or the server died.
func (res *CellResult) judge(s *server) {
	lr := res.Result
	switch {
	case !s.alive():
		res.Status, res.Reason = StatusFailed, "hostd serve died: "+s.tail()
	case lr.OK == 0:
		res.Status, res.Reason = StatusFailed, fmt.Sprintf("no response completed within the measured time (errors %v; try a longer --duration): %s", lr.Errors, s.tail())
	case float64(lr.ErrorCount()) > 0.01*float64(lr.OK+lr.ErrorCount()):
		res.Status, res.Reason = StatusFailed, fmt.Sprintf("%d errors %v, e.g. %v", lr.ErrorCount(), lr.Errors, lr.ErrorSamples)
	}
}

func (r *runner) runSweep(ctx context.Context, i int, c plannedCell) SweepResult {
	res := SweepResult{Name: c.name(), Handler: c.handler.Name, Mode: c.mode, Transport: string(c.transport), Status: StatusOK}
	if why := r.skipReason(c); why != "" {
		res.Status, res.Reason = StatusSkipped, why
		return res
	}
	rates := r.opts.Rates
	if len(rates) == 0 {
		capacity := r.capacity(ctx, c)
		if capacity <= 0 {
			res.Status, res.Reason = StatusFailed, "could not measure the handler's capacity for the rates"
			return res
		}
		for _, f := range sweepFractions(r.opts.Quick) {
			rates = append(rates, roundRate(capacity*f))
		}
	}
	r.progress(i, c)
	s, _, err := r.startCell(ctx, c)
	if err != nil {
		res.Status, res.Reason = StatusFailed, err.Error()
		return res
	}
	defer s.stop()
	t := r.target(c.handler, c.transport, s)
	for _, rate := range rates {
		lr, err := load.Open(ctx, t, r.opts.SweepConns, rate, r.opts.Warmup/2, r.opts.SweepDuration)
		if err != nil {
			res.Status, res.Reason = StatusFailed, err.Error()
			return res
		}
		res.Points = append(res.Points, lr)
	}
	if !s.alive() {
		res.Status, res.Reason = StatusFailed, "hostd serve died: "+s.tail()
	}
	return res
}

// capacity is the rate the sweep's rates are fractions of: the best
// closed-loop rate of the handler over HTTPS keep-alive in this run (so
// every mode of a handler is offered the same rates), measured with a
// short closed loop in mode none when the grid did not include it.
func (r *runner) capacity(ctx context.Context, c plannedCell) float64 {
	if v, ok := r.rep.capacity[c.handler.Name]; ok {
		return v
	}
	if r.rep.capacity == nil {
		r.rep.capacity = map[string]float64{}
	}
	best := 0.0
	for _, cell := range r.rep.Cells {
		if cell.Handler == c.handler.Name && cell.Transport == string(load.HTTPS) && cell.Status == StatusOK {
			best = max(best, cell.Result.RPS)
		}
	}
	if best == 0 {
		probe := plannedCell{handler: c.handler, mode: "none", transport: load.HTTPS}
		s, _, err := r.startCell(ctx, probe)
		if err != nil {
			return 0
		}
		lr, err := load.Closed(ctx, r.target(c.handler, load.HTTPS, s), r.opts.Conns, r.opts.Warmup, r.opts.Duration)
		s.stop()
		if err != nil {
			return 0
		}
		best = lr.RPS
	}
	r.rep.capacity[c.handler.Name] = best
	return best
}

// roundRate rounds to two significant digits.
func roundRate(v float64) float64 {
	if v < 10 {
		return max(1, float64(int(v+0.5)))
	}
	p := 1.0
	for v/p >= 100 {
		p *= 10
	}
	return float64(int(v/p+0.5)) * p
}

// isTerminal reports whether w is a terminal (the progress line then
// rewrites itself).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// median picks the run with the median requests/s of a cell's rounds and
// records every round's rate; a failed round makes the cell failed (the
// first failure is reported).
func median(runs []CellResult) CellResult {
	var ok []CellResult
	for _, c := range runs {
		switch c.Status {
		case StatusFailed:
			return c
		case StatusOK:
			ok = append(ok, c)
		}
	}
	if len(ok) == 0 {
		return runs[0] // skipped
	}
	slices.SortFunc(ok, func(a, b CellResult) int { return cmp.Compare(a.Result.RPS, b.Result.RPS) })
	m := ok[(len(ok)-1)/2]
	if len(ok) > 1 {
		for _, c := range runs {
			m.Rounds = append(m.Rounds, c.Result.RPS)
		}
	}
	return m
}
