package scalability

import (
	"bytes"
	"encoding/xml"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hostd/hostd/sandbox/sandboxtest"
	"github.com/hostd/hostd/tenant"
)

func sweep(admission bool, rates ...float64) []Point {
	var pts []Point
	for i, r := range rates {
		pts = append(pts, Point{Clients: 16 << i, Admission: admission, RepliesPerSec: r, Full: 1, Resumed: 3})
	}
	return pts
}

func TestSaturation(t *testing.T) {
	tests := []struct {
		name  string
		rates []float64
		want  int
	}{
		{"linear, not saturated", []float64{100, 200, 400, 800}, 0},
		{"flat after 64", []float64{100, 200, 400, 420, 430}, 64},
		{"collapse after 32", []float64{100, 200, 60, 10}, 32},
		{"single point", []float64{100}, 0},
	}
	for _, tt := range tests {
		if got := Saturation(sweep(false, tt.rates...)); got != tt.want {
			t.Errorf("%s: Saturation = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestSummariesAndOutput(t *testing.T) {
	r := &Report{
		Options: Options{ThinkTime: 7 * time.Second, Timeout: 10 * time.Second, Scale: 0.1, RequestsPerSession: 10, PageSize: 1, KeyType: "rsa2048"},
		Off:     sweep(false, 100, 200, 400, 410, 100, 20),
		On:      sweep(true, 100, 200, 400, 410, 400, 395),
	}
	s := r.Summaries()
	if s[0].Saturation != 64 || s[0].Peak != 410 || s[0].At2x != 410 || s[0].At4x != 100 {
		t.Errorf("off summary: %+v", s[0])
	}
	if s[1].Saturation != 64 || s[1].At4x != 400 || s[1].Retained4x() < 0.97 || s[1].Retained4x() > 0.98 {
		t.Errorf("on summary: %+v (retained %.3f)", s[1], s[1].Retained4x())
	}
	var tbl bytes.Buffer
	if err := r.WriteTable(&tbl); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 512 | off | 20.0 |", "| 512 | on | 395.0 |", "| on | 410.0 (128) | 64 clients | 410.0 (100%) | 400.0 (98%) |", "| off | 410.0 (128) | 64 clients | 410.0 (100%) | 100.0 (24%) |", "think 700ms", "timeout 1s"} {
		if !strings.Contains(tbl.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tbl.String())
		}
	}
	var svg bytes.Buffer
	if err := r.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg.Bytes(), new(struct{})); err != nil {
		t.Errorf("SVG is not well-formed XML: %v", err)
	}
	if n := strings.Count(svg.String(), "<polyline"); n != 2 {
		t.Errorf("SVG has %d lines, want 2 (on and off)", n)
	}
}

func TestCPUTime(t *testing.T) {
	before, err := cpuTime(os.Getpid())
	if err != nil {
		sandboxtest.Skipf(t, "no CPU time here: %v", err)
	}
	// Spin until 50ms of CPU are measured (the machine may be shared).
	start := time.Now()
	for {
		now, err := cpuTime(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if d := now - before; d >= 50*time.Millisecond {
			if wall := time.Since(start); d > 2*wall+20*time.Millisecond { // up to 2 threads spin here
				t.Errorf("%v of CPU measured in %v", d, wall)
			}
			return
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("CPU time did not advance 50ms in 20s of spinning (%v)", now-before)
		}
	}
}

func TestOptionsDefaults(t *testing.T) {
	var o Options
	if err := o.defaults(); err == nil {
		t.Error("Options without Binary accepted")
	}
	o = Options{Binary: "/bin/true"}
	if err := o.defaults(); err != nil {
		t.Fatal(err)
	}
	if o.think() != 350*time.Millisecond || o.timeout() != 500*time.Millisecond || o.KeyType != "rsa2048" {
		t.Errorf("defaults: think %v, timeout %v, key %s", o.think(), o.timeout(), o.KeyType)
	}
	o = Options{Binary: "/bin/true", KeyType: "dsa"}
	if err := o.defaults(); err == nil {
		t.Error("key type dsa accepted")
	}
}

// TestMainConfig: without admission control every overload limit is off;
// with it, the option's keys and handshake_wait at a fifth of the client
// timeout.
func TestMainConfig(t *testing.T) {
	enc := func(admission bool, o *Options) string {
		var b strings.Builder
		if err := tenant.Encode(&b, mainConfig("127.0.0.1:1", admission, o.admission())); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	o := &Options{Timeout: 5 * time.Second, Scale: 1, Admission: tenant.Server{MaxHandshakes: 8}}
	if got, want := enc(false, o), "[server]\nlisten_https = \"127.0.0.1:1\"\nstate_dir = \"state\"\nmax_handshakes = -1\naccept_rate = -1\nmax_conns_per_ip = -1\n"; got != want {
		t.Errorf("without admission:\n%s\nwant\n%s", got, want)
	}
	if got, want := enc(true, o), "[server]\nlisten_https = \"127.0.0.1:1\"\nstate_dir = \"state\"\nmax_handshakes = 8\nhandshake_wait = \"1s\"\n"; got != want {
		t.Errorf("with admission:\n%s\nwant\n%s", got, want)
	}
}
