package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestBenchFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rates", "100,x"}, `--rates: "x"`},
		{[]string{"--rates", "-5"}, "not a positive number"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--scalability", "--clients", "10,x"}, `--clients: "x"`},
		{[]string{"--no-such-flag"}, "flag provided but not defined"},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"bench"}, tc.args...), &out, &errb); code != 2 {
			t.Errorf("bench %q: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(errb.String(), tc.want) {
			t.Errorf("bench %q: stderr %q, want %q", tc.args, errb.String(), tc.want)
		}
	}
}

// TestBenchCommand runs `hostd bench` on one cell against a freshly
// built binary and checks the table and the files.
func TestBenchCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs hostd")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "hostd")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	code := run([]string{"bench", "--quick", "--hostd", bin, "--cells", "native/none/https,sweep/lua/none",
		"--duration", "1s", "--warmup", "300ms", "--rates", "100,200", "--sweep-duration", "300ms", "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"https (HTTPS keep-alive)", "native", "lua/none", "100->", "0 failed"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "ETA") {
		t.Errorf("no progress line on stderr: %q", stderr.String())
	}
	for _, f := range []string{"results.json", "results.csv", "sweep.svg", "handlers.svg"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
