package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// perfRecord is a running `perf record` of the server.
type perfRecord struct {
	cmd  *exec.Cmd
	data string
	err  error
}

func startPerf(ctx context.Context, dir, cell string, pid int, d time.Duration) *perfRecord {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &perfRecord{err: err}
	}
	data := filepath.Join(dir, strings.ReplaceAll(cell, "/", "_")+".perf.data")
	secs := strconv.FormatFloat(d.Seconds(), 'f', 2, 64)
	cmd := exec.CommandContext(ctx, "perf", "record", "-q", "-g", "-F", "999", "-p", strconv.Itoa(pid), "-o", data, "--", "sleep", secs)
	p := &perfRecord{cmd: cmd, data: data}
	if p.err = cmd.Start(); p.err != nil {
		p.cmd = nil
	}
	return p
}

// finish waits for perf and writes the top symbols next to the data;
// it returns a one-line summary for the report.
func (p *perfRecord) finish(ctx context.Context) string {
	if p.cmd != nil {
		p.err = p.cmd.Wait()
	}
	if p.err != nil {
		return "perf: " + p.err.Error()
	}
	out, err := exec.CommandContext(ctx, "perf", "report", "-i", p.data, "--stdio", "--no-children",
		"--sort", "comm,dso,symbol", "--percent-limit", "1", "-g", "none").Output()
	if err != nil {
		return "perf report: " + err.Error()
	}
	txt := strings.TrimSuffix(p.data, ".data") + ".txt"
	if err := os.WriteFile(txt, out, 0o644); err != nil {
		return err.Error()
	}
	var top []string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || strings.HasPrefix(l, "#") || !strings.HasSuffix(f[0], "%") {
			continue
		}
		top = append(top, f[0]+" "+f[len(f)-1])
		if len(top) == 5 {
			break
		}
	}
	return fmt.Sprintf("%s: %s", txt, strings.Join(top, ", "))
}
