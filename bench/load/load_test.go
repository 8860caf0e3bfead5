package load

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		name string
		d    []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"p50 of 3", ms(1, 2, 3), 50, 2 * time.Millisecond},
		{"p50 of 4", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p90 of 1..100", ms(hundred...), 90, 90 * time.Millisecond},
		{"p99 of 1..100", ms(hundred...), 99, 99 * time.Millisecond},
		{"p100", ms(1, 2, 3), 100, 3 * time.Millisecond},
		{"p99 of 10", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.d, tc.p); got != tc.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tc.d, tc.p, got, tc.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	d := []time.Duration{5, 1, 4, 2, 3}
	got := Summarize(d)
	want := Latency{P50: 3, P90: 5, P99: 5, Max: 5, Mean: 3}
	if got != want {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"deadline", context.DeadlineExceeded, ErrTimeout},
		{"os deadline", os.ErrDeadlineExceeded, ErrTimeout},
		{"dial", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, ErrConnect},
		{"refused", syscall.ECONNREFUSED, ErrConnect},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, ErrReset},
		{"eof", io.ErrUnexpectedEOF, ErrReset},
		{"classed", classedError{ErrConnect, errors.New("x")}, ErrConnect},
		{"other", errors.New("strange"), ErrOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.err); got != tc.want {
				t.Errorf("Classify(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}

// testServer answers by path: /ok 200 "hello", /500 a 500, /short a body
// shorter than announced elsewhere, /slow after 30ms, /hang after 2s,
// /close closes the connection without answering. It counts requests
// and new connections.
type testServer struct {
	*httptest.Server
	requests, conns, resumed atomic.Int64
}

func newTestServer(t *testing.T, tlsOn bool) *testServer {
	ts := &testServer{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.requests.Add(1)
		if r.TLS != nil && r.TLS.DidResume {
			ts.resumed.Add(1)
		}
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "hello")
		case "/500":
			http.Error(w, "boom", 500)
		case "/short":
			io.WriteString(w, "hi")
		case "/slow":
			time.Sleep(30 * time.Millisecond)
			io.WriteString(w, "hello")
		case "/hang":
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
			io.WriteString(w, "hello")
		case "/close":
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
		}
	})
	ts.Server = httptest.NewUnstartedServer(h)
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			ts.conns.Add(1)
		}
	}
	if tlsOn {
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	return ts
}

func (ts *testServer) target(tr Transport, path string) Target {
	u := strings.Replace(ts.URL, "127.0.0.1", "a.test", 1) + path
	return Target{URLs: []string{u}, Addr: ts.Listener.Addr().String(), Transport: tr, BodyLen: 5, Timeout: time.Second}
}

func TestClosedAccounting(t *testing.T) {
	for _, tc := range []struct {
		path      string
		wantClass string // "" = all OK
	}{
		{"/ok", ""},
		{"/500", "status_500"},
		{"/short", ErrBody},
		{"/hang", ErrTimeout},
		{"/close", ErrReset},
	} {
		t.Run(tc.path, func(t *testing.T) {
			ts := newTestServer(t, false)
			d, warm := 300*time.Millisecond, 50*time.Millisecond
			if tc.path == "/hang" {
				// No warm-up: the first requests time out after 1 s,
				// inside the measured 1.5 s.
				d, warm = 1500*time.Millisecond, 0
			}
			r, err := Closed(t.Context(), ts.target(HTTP1, tc.path), 4, warm, d)
			if err != nil {
				t.Fatal(err)
			}
			served := ts.requests.Load()
			if tc.wantClass == "" {
				if r.ErrorCount() != 0 || r.OK == 0 {
					t.Fatalf("ok=%d errors=%v", r.OK, r.Errors)
				}
				// Warm-up requests and those finishing after the end are
				// served but not counted: at most a few per connection
				// beyond the measured ones.
				if r.OK > served {
					t.Errorf("counted %d OK, server saw only %d", r.OK, served)
				}
				if want := float64(r.OK) / d.Seconds(); r.RPS != want {
					t.Errorf("RPS %v, want %v", r.RPS, want)
				}
				if r.Latency.P50 <= 0 || r.Latency.P50 > r.Latency.P90 || r.Latency.P90 > r.Latency.P99 || r.Latency.P99 > r.Latency.Max {
					t.Errorf("latency not ordered: %+v", r.Latency)
				}
				if n := ts.conns.Load(); n != 4 {
					t.Errorf("keep-alive used %d connections, want 4", n)
				}
				return
			}
			if r.OK != 0 {
				t.Errorf("ok=%d, want 0", r.OK)
			}
			if r.Errors[tc.wantClass] == 0 || len(r.Errors) != 1 {
				t.Errorf("errors %v, want only %s", r.Errors, tc.wantClass)
			}
			if r.ErrorSamples[tc.wantClass] == "" {
				t.Errorf("no error sample for %s: %v", tc.wantClass, r.ErrorSamples)
			}
			if tc.wantClass != ErrTimeout && r.Errors[tc.wantClass] > served {
				t.Errorf("%d errors, server saw %d", r.Errors[tc.wantClass], served)
			}
		})
	}
}

func TestClosedConnectError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r, err := Closed(t.Context(), Target{URLs: []string{"http://a.test/"}, Addr: addr, Transport: HTTP1, BodyLen: -1}, 2, 0, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK != 0 || r.Errors[ErrConnect] == 0 || len(r.Errors) != 1 {
		t.Errorf("ok=%d errors=%v, want only connect errors", r.OK, r.Errors)
	}
}

func TestClosedLatency(t *testing.T) {
	ts := newTestServer(t, false)
	r, err := Closed(t.Context(), ts.target(HTTP1, "/slow"), 2, 0, 400*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// 2 connections, 30 ms per request: about 66 requests/s.
	if r.Latency.P50 < 30*time.Millisecond || r.Latency.P50 > 200*time.Millisecond {
		t.Errorf("p50 %v, want about 30ms", r.Latency.P50)
	}
	if r.RPS > 2/0.030+1 || r.RPS < 20 {
		t.Errorf("RPS %.1f, want at most %.1f", r.RPS, 2/0.030)
	}
}

func TestTransports(t *testing.T) {
	for _, tc := range []struct {
		tr          Transport
		perRequest  bool // a new connection per request
		wantResumes bool
	}{
		{HTTPS, false, false},
		{HTTPSNew, true, false},
		{HTTPSResume, true, true},
	} {
		t.Run(string(tc.tr), func(t *testing.T) {
			ts := newTestServer(t, true)
			r, err := Closed(t.Context(), ts.target(tc.tr, "/ok"), 2, 0, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			// A few requests per connection show the transport's
			// behaviour; how many fit in the second is the machine's.
			if r.OK < 4 || r.ErrorCount() != 0 {
				t.Fatalf("ok=%d errors=%v", r.OK, r.Errors)
			}
			conns, reqs := ts.conns.Load(), ts.requests.Load()
			if tc.perRequest && conns != reqs {
				t.Errorf("%d connections for %d requests, want one each", conns, reqs)
			}
			if !tc.perRequest && conns != 2 {
				t.Errorf("%d connections, want 2", conns)
			}
			res := ts.resumed.Load()
			if tc.wantResumes && res < reqs-2 {
				t.Errorf("%d of %d requests resumed, want all but the first per connection", res, reqs)
			}
			if !tc.wantResumes && res != 0 {
				t.Errorf("%d resumed, want 0", res)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	t.Run("below capacity", func(t *testing.T) {
		ts := newTestServer(t, false)
		r, err := Open(t.Context(), ts.target(HTTP1, "/ok"), 4, 400, 100*time.Millisecond, 500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		// 400/s for 0.5 s = 200 requests, each answered or, on a busy
		// machine, counted as one the generator could not send in time
		// (what it must do rather than send late); most are answered.
		unsent := r.Errors[ErrUnsent]
		if n := int64(r.OK) + unsent; n < 180 || n > 240 || r.OK < 100 || r.ErrorCount() != unsent {
			t.Errorf("ok=%d errors=%v, want about 200 answered or unsent, no other error", r.OK, r.Errors)
		}
		if r.Offered != 400 {
			t.Errorf("offered %v", r.Offered)
		}
	})
	t.Run("saturated", func(t *testing.T) {
		ts := newTestServer(t, false)
		// 2 connections x 30 ms = at most ~66/s; offer 300/s.
		r, err := Open(t.Context(), ts.target(HTTP1, "/slow"), 2, 300, 0, 600*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if r.RPS > 70 || r.RPS < 20 {
			t.Errorf("achieved %.1f/s, want at most ~66", r.RPS)
		}
		if r.Errors[ErrUnsent] < 100 {
			t.Errorf("unsent %d, want the backlog counted", r.Errors[ErrUnsent])
		}
		// Queueing shows in the latency measured from the schedule.
		if r.Latency.P99 < 150*time.Millisecond {
			t.Errorf("p99 %v, want queueing delay", r.Latency.P99)
		}
	})
	t.Run("bad rate", func(t *testing.T) {
		if _, err := Open(t.Context(), Target{URLs: []string{"http://x/"}, Addr: "127.0.0.1:1"}, 1, 0, 0, time.Second); err == nil {
			t.Error("rate 0 accepted")
		}
	})
}
