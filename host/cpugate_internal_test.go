package host

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/hostd/hostd/host/admission"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// TestCPUGate: a tenant alone may use every CPU; while another tenant
// waits or runs, it keeps at most its share, and its own runs queue
// behind it; waiters that time out or are cancelled leave the queue.
func TestCPUGate(t *testing.T) {
	g := &cpuGate{cpus: 2, share: 1, tenants: map[string]*cpuTenant{}}
	a, b := g.tenant("a"), g.tenant("b")
	ctx := context.Background()
	mustAcquire := func(tn *cpuTenant) {
		t.Helper()
		if err := g.acquire(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	mustAcquire(a) // its share
	mustAcquire(a) // an idle CPU, nobody waiting: work-conserving
	granted := make(chan struct{})
	go func() { mustAcquire(a); close(granted) }() // no CPU left: queues
	sandboxtest.WaitFor(t, "the gate state", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(a.queue) == 1 })
	mustAcquire(b) // b's share, at once, though a waits and both CPUs are taken
	g.release(a)   // a holds 1 (its share) and b 1: a's waiter stays queued
	select {
	case <-granted:
		t.Fatal("a got a second CPU while b runs")
	case <-time.After(50 * time.Millisecond):
	}
	g.release(b) // a CPU idles and only a waits, but b was here just now
	select {
	case <-granted:
		t.Fatal("a got a second CPU right after b ran")
	case <-time.After(50 * time.Millisecond):
	}
	g.mu.Lock()
	for _, seen := range []*cpuSeen{&g.last1, &g.last2} {
		if seen.t == b {
			seen.at = seen.at.Add(-otherIdle) // b left a while ago
		}
	}
	g.dispatch()
	g.mu.Unlock()
	<-granted
	if a.running != 2 || g.running != 2 {
		t.Fatalf("a running %d, total %d", a.running, g.running)
	}
	// A cancelled waiter leaves the queue and holds nothing.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- g.acquire(cctx, a) }()
	sandboxtest.WaitFor(t, "the gate state", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(a.queue) == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	g.release(a)
	g.release(a)
	if a.running != 0 || g.running != 0 || len(g.waiting) != 0 || len(a.queue) != 0 {
		t.Fatalf("left: a %d total %d waiting %d queue %d", a.running, g.running, len(g.waiting), len(a.queue))
	}
	if g.waits.Load() != 2 {
		t.Fatalf("waits = %d", g.waits.Load())
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":                 "192.0.2.7",
		"::ffff:192.0.2.7":          "192.0.2.7",
		"2001:db8:1:2:aaaa::1":      "2001:db8:1:2::",
		"2001:db8:1:2:ffff:ffff::9": "2001:db8:1:2::",
		"2001:db8:1:3::1":           "2001:db8:1:3::",
	} {
		if got := admission.ClientKey(mustAddr(t, in)).String(); got != want {
			t.Errorf("clientKey(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestRedactor(t *testing.T) {
	r := newRedactor([]string{"token", "password"})
	for in, want := range map[string]string{
		"/a":                               "/a",
		"/a?x=1":                           "/a?x=1",
		"/a?token=abc&x=1":                 "/a?token=REDACTED&x=1",
		"/a?TOKEN=abc;password=p&x":        "/a?TOKEN=REDACTED&password=REDACTED&x",
		"/a?%74oken=abc":                   "/a?%74oken=REDACTED",
		"https://h/cb?x=1&password=p#frag": "https://h/cb?x=1&password=REDACTED#frag",
		"/a?token":                         "/a?token",
		"/a?notatoken=abc":                 "/a?notatoken=abc",
	} {
		if got := r.uri(in); got != want {
			t.Errorf("uri(%q) = %q, want %q", in, got, want)
		}
	}
	if got := (*redactor)(nil).uri("/a?token=x"); got != "/a?token=x" {
		t.Errorf("nil redactor changed %q", got)
	}
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
