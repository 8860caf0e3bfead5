package bench

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/bench/load"
)

// buildHostd builds the hostd binary the bench starts as its server, or
// returns $HOSTD_BIN when set (to run the test binary as another user).
func buildHostd(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("HOSTD_BIN"); bin != "" {
		return bin
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	bin := filepath.Join(t.TempDir(), "hostd")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/hostd/hostd/cmd/hostd")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build hostd: %v\n%s", err, out)
	}
	return bin
}

// TestQuickSubset runs a tiny --quick subset end to end: a real hostd
// serve process per cell, over every transport, a CGI cell and a sweep.
// As root every cell must pass; otherwise the switching modes must be
// skipped with the reason.
func TestQuickSubset(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs hostd")
	}
	bin := buildHostd(t)
	var progress bytes.Buffer
	rep, err := Run(t.Context(), Options{
		Hostd:         bin,
		Quick:         true,
		Cells:         "native/none,lua/thread/https,mruby/none/https,cgi/suexec/https,sweep/lua/none",
		Duration:      300 * time.Millisecond,
		Warmup:        100 * time.Millisecond,
		Conns:         4,
		Rates:         []float64{200, 400},
		SweepDuration: 300 * time.Millisecond,
		Repeat:        2,
		Progress:      &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0
	byName := map[string]CellResult{}
	for _, c := range rep.Cells {
		byName[c.Name] = c
	}
	wantCells := []string{"native/none/h1", "native/none/https", "native/none/https-new", "native/none/https-resume",
		"lua/thread/https", "mruby/none/https", "cgi/suexec/https"}
	if len(rep.Cells) != len(wantCells) {
		t.Errorf("%d cells, want %d", len(rep.Cells), len(wantCells))
	}
	for _, name := range wantCells {
		c, ok := byName[name]
		switch {
		case !ok:
			t.Errorf("cell %s missing", name)
		case !root && (strings.Contains(name, "thread") || strings.Contains(name, "suexec")):
			if c.Status != StatusSkipped || !strings.Contains(c.Reason, "root") {
				t.Errorf("%s as non-root: %s %q, want skipped for root", name, c.Status, c.Reason)
			}
		case c.Status != StatusOK:
			t.Errorf("%s: %s: %s", name, c.Status, c.Reason)
		default:
			if c.Result.OK == 0 || c.Result.ErrorCount() != 0 || c.Result.Latency.P50 <= 0 {
				t.Errorf("%s: ok=%d errors=%v p50=%v", name, c.Result.OK, c.Result.Errors, c.Result.Latency.P50)
			}
			if len(c.Rounds) != 2 {
				t.Errorf("%s: rounds %v, want 2", name, c.Rounds)
			}
			if c.ResponseBytes != byName["native/none/https"].ResponseBytes {
				t.Errorf("%s: response of %d bytes, native has %d", name, c.ResponseBytes, byName["native/none/https"].ResponseBytes)
			}
		}
	}
	if len(rep.Sweeps) != 1 || rep.Sweeps[0].Status != StatusOK || len(rep.Sweeps[0].Points) != 2 {
		t.Fatalf("sweeps: %+v", rep.Sweeps)
	}
	for _, p := range rep.Sweeps[0].Points {
		// Far below capacity, the server answers what is offered; what
		// the generator could not send in time on a busy machine (-race,
		// other tests) it counts as unsent rather than sending it late,
		// and no other error may occur.
		unsent := p.Errors[load.ErrUnsent]
		others := int64(0)
		for k, n := range p.Errors {
			if k != load.ErrUnsent {
				others += n
			}
		}
		if p.RPS < 0.5*p.Offered || p.RPS > 1.05*p.Offered || others != 0 || float64(unsent) > 0.4*p.Offered {
			t.Errorf("sweep point offered %.0f achieved %.1f errors %v", p.Offered, p.RPS, p.Errors)
		}
	}
	if rep.Machine.GoVersion == "" || rep.Machine.Kernel == "" || rep.Machine.LoadGOMAXPROCS == 0 {
		t.Errorf("machine: %+v", rep.Machine)
	}
	if runtime.NumCPU() > 1 && (len(rep.Machine.ServerCPUs) == 0 || len(rep.Machine.LoadCPUs) == 0) {
		t.Errorf("not pinned on %d CPUs: %+v", runtime.NumCPU(), rep.Machine)
	}
	if !strings.Contains(progress.String(), "ETA") {
		t.Errorf("no progress line: %q", progress.String())
	}
	if f := rep.Failed(); len(f) > 0 {
		t.Errorf("failed: %q", f)
	}
}
