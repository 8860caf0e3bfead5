package host

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostd/hostd/scripting"
)

// cpuWait bounds how long a hook run, CGI script or PHP request waits for
// its tenant's CPU share before it is answered 503.
const cpuWait = 10 * time.Second

// errCPUBusy is the error of a run that waited cpuWait in vain.
var errCPUBusy = errors.New("the tenant's share of the CPUs stayed taken (server.tenant_cpu_share)")

// cpuGate is the weighted queue in front of tenant code that burns CPU
// (hook runs, CGI scripts, PHP requests): while another tenant uses the
// gate (or did within otherIdle), one tenant holds at most share x CPUs
// of runs at once, and its further runs queue behind its own; a tenant
// alone may use every CPU. A tenant under its share never waits. Waiting
// tenants are served round robin, so a tenant running endless hooks
// delays itself, not the others.
// A nil gate (tenant_cpu_share = 1) lets everything run. It is safe for
// concurrent use.
type cpuGate struct {
	cpus, share int // share: runs one tenant may hold while others wait

	mu      sync.Mutex
	running int
	waiting []*cpuTenant // tenants with queued runs, in service order
	tenants map[string]*cpuTenant
	// The two tenants last seen in the gate, and when: a tenant may go
	// beyond its share only when no other tenant was seen for otherIdle.
	last1, last2 cpuSeen

	waits    atomic.Uint64 // runs that had to queue
	rejected atomic.Uint64 // runs that waited cpuWait in vain
}

// otherIdle is how long another tenant must have been absent from the
// gate before one tenant may use more than its share: about a hook's
// time limit, so that a tenant whose requests come one after another
// finds a CPU free each time.
const otherIdle = time.Second

type cpuSeen struct {
	t  *cpuTenant
	at time.Time
}

// seen records that t used the gate at now. g.mu is held.
func (g *cpuGate) seen(t *cpuTenant, now time.Time) {
	if g.last1.t == t {
		g.last1.at = now
		return
	}
	g.last2, g.last1 = g.last1, cpuSeen{t, now}
}

// alone reports whether no tenant but t was seen for otherIdle. g.mu is
// held.
func (g *cpuGate) alone(t *cpuTenant, now time.Time) bool {
	other := g.last1
	if other.t == t {
		other = g.last2
	}
	return other.t == nil || now.Sub(other.at) >= otherIdle
}

// cpuTenant is one tenant's place in the gate (by server name).
type cpuTenant struct {
	running int
	queue   []chan struct{}
}

func newCPUGate(share float64) *cpuGate {
	if share <= 0 || share >= 1 {
		return nil
	}
	cpus := runtime.GOMAXPROCS(0)
	return &cpuGate{cpus: cpus, share: max(1, int(share*float64(cpus))), tenants: make(map[string]*cpuTenant)}
}

func (g *cpuGate) tenant(name string) *cpuTenant {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.tenants[name]
	if !ok {
		t = new(cpuTenant)
		g.tenants[name] = t
	}
	return t
}

// forget drops the tenants not in keep that hold and wait for nothing.
func (g *cpuGate) forget(keep func(string) bool) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for n, t := range g.tenants {
		if !keep(n) && t.running == 0 && len(t.queue) == 0 {
			delete(g.tenants, n)
		}
	}
}

type cpuHeld struct{}

// cpuHold is a run's place in the gate. It is the run's
// scripting.Waiter: a hook that waits for the network (an outbound
// request) gives its place back meanwhile, so slow remote APIs do not
// take the tenant's CPU share from its other requests. Used by the run's
// goroutine only.
//
// It is also the run's context: the request's, answering cpuHeld{} (one
// allocation where a context.WithValue would be another).
type cpuHold struct {
	context.Context
	g    *cpuGate
	t    *cpuTenant
	held bool
}

// Value marks the run as holding its place, for nested runs.
func (h *cpuHold) Value(key any) any {
	if _, ok := key.(cpuHeld); ok {
		return true
	}
	return h.Context.Value(key)
}

// Pause releases the place; resume queues for it again. When it cannot
// get it back (the share stayed taken for cpuWait, or the request
// ended), the run goes on without it: its own deadline still bounds it.
func (h *cpuHold) Pause() (resume func()) {
	if !h.held {
		return func() {}
	}
	h.g.release(h.t)
	h.held = false
	return func() {
		if h.g.acquire(h.Context, h.t) == nil {
			h.held = true
		}
	}
}

// run runs fn once t may use a CPU. A run nested in another of the same
// request (a CGI local redirect) does not queue again.
func (g *cpuGate) run(ctx context.Context, t *cpuTenant, fn func(context.Context)) error {
	if g == nil || ctx.Value(cpuHeld{}) != nil {
		fn(ctx)
		return nil
	}
	if err := g.acquire(ctx, t); err != nil {
		return err
	}
	h := &cpuHold{Context: ctx, g: g, t: t, held: true}
	defer func() {
		if h.held {
			g.release(t)
		}
	}()
	fn(scripting.WithWaiter(h, h))
	return nil
}

func (g *cpuGate) acquire(ctx context.Context, t *cpuTenant) error {
	g.mu.Lock()
	now := time.Now()
	g.seen(t, now)
	if t.running < g.share || (g.running < g.cpus && len(g.waiting) == 0 && g.alone(t, now)) {
		t.running++
		g.running++
		g.mu.Unlock()
		return nil
	}
	ch := make(chan struct{}, 1)
	t.queue = append(t.queue, ch)
	if len(t.queue) == 1 {
		g.waiting = append(g.waiting, t)
	}
	g.mu.Unlock()
	g.waits.Add(1)
	timer := time.NewTimer(cpuWait)
	defer timer.Stop()
	var err error
	select {
	case <-ch:
		return nil
	case <-timer.C:
		err = errCPUBusy
	case <-ctx.Done():
		err = ctx.Err()
	}
	g.mu.Lock()
	for i, c := range t.queue {
		if c == ch {
			t.queue = append(t.queue[:i], t.queue[i+1:]...)
			if len(t.queue) == 0 {
				g.dropWaiting(t)
			}
			g.mu.Unlock()
			if err == errCPUBusy {
				g.rejected.Add(1)
			}
			return err
		}
	}
	g.mu.Unlock()
	<-ch // granted meanwhile: give it back
	g.release(t)
	return err
}

func (g *cpuGate) release(t *cpuTenant) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t.running--
	g.running--
	g.seen(t, time.Now())
	g.dispatch()
}

// dispatch grants queued runs: first to waiting tenants under their share,
// round robin; then, while CPUs are idle, to the waiting tenant holding
// the fewest. g.mu is held.
func (g *cpuGate) dispatch() {
	for len(g.waiting) > 0 {
		var pick *cpuTenant
		for _, w := range g.waiting {
			if w.running < g.share {
				pick = w
				break
			}
		}
		if pick == nil && g.running < g.cpus {
			now := time.Now()
			for _, w := range g.waiting {
				if (pick == nil || w.running < pick.running) && g.alone(w, now) {
					pick = w
				}
			}
		}
		if pick == nil {
			return
		}
		ch := pick.queue[0]
		pick.queue = pick.queue[1:]
		pick.running++
		g.running++
		ch <- struct{}{}
		g.dropWaiting(pick)
		if len(pick.queue) > 0 {
			g.waiting = append(g.waiting, pick) // to the back: round robin
		}
	}
}

func (g *cpuGate) dropWaiting(t *cpuTenant) {
	for i, w := range g.waiting {
		if w == t {
			g.waiting = append(g.waiting[:i], g.waiting[i+1:]...)
			return
		}
	}
}

// cpuRun runs fn (a CGI script or PHP request) under the vhost's CPU
// share; it answers 503 itself when the share stayed taken, and reports
// whether fn ran. The request body is read first (spool.go), and fn's
// writer gives the place back while it waits for the client: a slow
// client holds its own request, not the tenant's share.
func (v *vhost) cpuRun(w http.ResponseWriter, r *http.Request, fn func(http.ResponseWriter, *http.Request)) bool {
	done, err := spoolBody(r, int64(v.cfg.Limits.MaxBody))
	defer done()
	if err != nil {
		v.logger.Info("request body not received", "err", err)
		httpError(w, http.StatusBadRequest, "the request body could not be read")
		return false
	}
	err = v.gate.run(r.Context(), v.cpuT, func(ctx context.Context) {
		if ctx != r.Context() {
			r = r.WithContext(ctx)
		}
		fn(&gateWriter{ResponseWriter: w, ctx: ctx}, r)
	})
	if err != nil {
		v.logger.Warn("request not run: CPU share taken", "err", err)
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, "this site is busy, please retry shortly")
		return false
	}
	return true
}
