package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Tenant runs functions with one tenant's identity according to its Mode.
// A Tenant holds no thread and no goroutine while idle. It is safe for
// concurrent use.
type Tenant struct {
	mode        Mode
	id          Identity
	pers        *personality // ModeUring: the tenant's credentials on the rings
	dirs        *Dirs        // shared gate roots, or nil
	maxWorkers  int
	idleTimeout time.Duration
	logger      *slog.Logger

	busy    atomic.Int64
	started atomic.Uint64
	runs    atomic.Uint64

	// closed is set under mu (so the thread modes see it consistently with
	// idle and queue) and read without it by the modes that need no worker.
	closed atomic.Bool

	mu      sync.Mutex
	workers int       // live worker threads
	idle    []*worker // idle thread-mode workers, most recently idle last
	queue   []*job    // jobs waiting for a thread-mode worker, FIFO
}

// worker is an idle thread-mode worker's mailbox.
type worker struct {
	jobs chan *job // capacity 1; nil job means exit
}

// Job states.
const (
	jobPending int32 = iota
	jobStarted
	jobCancelled
)

// job is one call of Run handed to a worker thread.
type job struct {
	fn    func()
	state atomic.Int32
	done  chan struct{} // closed by whoever moved state away from pending
	err   error
}

// NewTenant validates opts and returns a Tenant. No thread is created until
// the first Run.
func NewTenant(opts Options) (*Tenant, error) {
	mode := opts.Mode
	if mode == "" {
		mode = ModeNone
	}
	if _, err := ParseMode(string(mode)); err != nil {
		return nil, err
	}
	if mode.ChecksTenant() {
		if !switchSupported {
			return nil, ErrUnsupported
		}
		if opts.Identity.UID == 0 || opts.Identity.GID == 0 {
			return nil, fmt.Errorf("sandbox: mode %s refuses tenant identity %d:%d: uid and gid must not be 0 (root)", mode, opts.Identity.UID, opts.Identity.GID)
		}
		if slices.Contains(opts.Identity.Groups, 0) {
			return nil, fmt.Errorf("sandbox: mode %s refuses supplementary group 0 (root) for uid %d", mode, opts.Identity.UID)
		}
	}
	if opts.MaxWorkers < 0 {
		return nil, fmt.Errorf("sandbox: MaxWorkers %d is negative", opts.MaxWorkers)
	}
	if opts.IdleTimeout < 0 {
		return nil, fmt.Errorf("sandbox: IdleTimeout %s is negative", opts.IdleTimeout)
	}
	t := &Tenant{
		mode:        mode,
		id:          Identity{UID: opts.Identity.UID, GID: opts.Identity.GID, Groups: sortedGroups(opts.Identity.Groups)},
		maxWorkers:  opts.MaxWorkers,
		idleTimeout: opts.IdleTimeout,
		logger:      opts.Logger,
		dirs:        opts.Dirs,
	}
	if t.maxWorkers == 0 {
		t.maxWorkers = DefaultMaxWorkers
	}
	if t.idleTimeout == 0 {
		t.idleTimeout = DefaultIdleTimeout
	}
	if t.logger == nil {
		t.logger = slog.New(slog.DiscardHandler)
	}
	t.logger = t.logger.With("sandbox_mode", string(mode), "uid", t.id.UID, "gid", t.id.GID)
	if mode == ModeUring {
		if opts.Rings == nil {
			return nil, ErrNoRings
		}
		var err error
		if t.pers, err = opts.Rings.registerPersonality(&t.id); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Mode returns the tenant's mode.
func (t *Tenant) Mode() Mode { return t.mode }

// Run calls fn with the tenant's effective identity as its mode dictates and
// waits for fn to return. It returns ctx.Err() only if fn never started;
// once fn has started, Run waits for it whatever ctx does. A panic in fn is
// returned as a *PanicError. Run returns ErrClosed after Close.
//
// fn must do its tenant work on the calling goroutine: goroutines that fn
// starts run on other threads with the server's identity.
//
// In ModeInline, if the calling thread's identity cannot be verified
// restored after fn, Run never returns: it ends the calling goroutine with
// runtime.Goexit while its thread is still locked, so that Go destroys the
// thread (deferred calls run first, with the tenant's identity).
func (t *Tenant) Run(ctx context.Context, fn func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	switch t.mode {
	case ModeThread:
		return t.runThread(ctx, fn)
	case ModeThreadPerRequest:
		return t.runThreadPerRequest(fn)
	}
	// inline, uring, none, suexec: fn runs on the calling goroutine.
	if t.closed.Load() {
		return ErrClosed
	}
	t.runs.Add(1)
	t.busy.Add(1)
	defer t.busy.Add(-1)
	if t.mode == ModeInline {
		return runInline(&t.id, fn, t.logger)
	}
	return callFn(fn)
}

// Close makes idle workers exit at once and busy ones after their current
// fn, and fails jobs still waiting for a worker with ErrClosed. Later Runs
// return ErrClosed. In ModeUring it unregisters the tenant's personality
// from the rings once no file operation uses it; the tenant's gates fail
// with ErrFSClosed afterwards. Close does not wait for threads to exit.
func (t *Tenant) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return
	}
	t.closed.Store(true)
	if t.pers != nil {
		if err := t.pers.close(); err != nil {
			t.logger.Error("sandbox: unregistering the io_uring personality", "err", err)
		}
	}
	for _, w := range t.idle {
		w.jobs <- nil
	}
	t.workers -= len(t.idle)
	t.idle = nil
	t.failQueue(ErrClosed)
}

// Stats returns a snapshot of the tenant's counters.
func (t *Tenant) Stats() Stats {
	t.mu.Lock()
	w, q := t.workers, 0
	for _, j := range t.queue {
		if j.state.Load() == jobPending {
			q++
		}
	}
	t.mu.Unlock()
	return Stats{Workers: w, Busy: int(t.busy.Load()), Started: t.started.Load(), Runs: t.runs.Load(), Queued: q}
}

// runThread hands fn to an idle worker, a new worker, or the wait queue.
func (t *Tenant) runThread(ctx context.Context, fn func()) error {
	j := &job{fn: fn, done: make(chan struct{})}
	t.mu.Lock()
	if t.closed.Load() {
		t.mu.Unlock()
		return ErrClosed
	}
	if n := len(t.idle); n > 0 {
		w := t.idle[n-1]
		t.idle[n-1] = nil
		t.idle = t.idle[:n-1]
		t.mu.Unlock()
		w.jobs <- j
		<-j.done
		return j.err
	}
	if t.workers < t.maxWorkers {
		t.workers++
		t.mu.Unlock()
		t.started.Add(1)
		go t.worker(j)
		<-j.done
		return j.err
	}
	t.queue = append(t.queue, j)
	t.mu.Unlock()
	select {
	case <-j.done:
		return j.err
	case <-ctx.Done():
		if j.state.CompareAndSwap(jobPending, jobCancelled) {
			return ctx.Err()
		}
		<-j.done
		return j.err
	}
}

// dequeue pops the first job still pending; t.mu must be held.
func (t *Tenant) dequeue() *job {
	for len(t.queue) > 0 {
		j := t.queue[0]
		t.queue[0] = nil
		t.queue = t.queue[1:]
		if len(t.queue) == 0 {
			t.queue = nil
		}
		if j.state.CompareAndSwap(jobPending, jobStarted) {
			return j
		}
	}
	return nil
}

// failQueue fails every waiting job with err; t.mu must be held.
func (t *Tenant) failQueue(err error) {
	for _, j := range t.queue {
		if j.state.CompareAndSwap(jobPending, jobCancelled) {
			j.err = err
			close(j.done)
		}
	}
	t.queue = nil
}

// worker is a thread-mode worker goroutine. It locks its thread, switches it
// to the tenant once and never unlocks it: when the goroutine returns, Go
// destroys the thread, so no thread that ever carried the tenant's identity
// is reused for anything else.
func (t *Tenant) worker(first *job) {
	runtime.LockOSThread()
	if onMainThread() {
		// The main thread is never switched (if it exited locked, Go
		// would wedge it instead of destroying it). Keep it parked and
		// start a replacement goroutine, which runs on another thread.
		t.logger.Warn("sandbox worker landed on the main thread; parking it (call runtime.LockOSThread in main's init)")
		go t.worker(first)
		select {}
	}
	first.state.Store(jobStarted) // not queued, nobody else can cancel it
	th, err := enterTenant(&t.id)
	if err != nil {
		t.logger.Error("sandbox worker could not switch to the tenant; thread discarded", "err", err)
		first.err = err
		close(first.done)
		t.mu.Lock()
		t.workers--
		if t.workers == 0 {
			// No worker left to serve the queue; the next Run starts
			// a new one.
			t.failQueue(err)
		}
		t.mu.Unlock()
		return
	}
	tid := th.tid
	t.logger.Debug("sandbox worker started", "tid", tid)
	var running *job // non-nil only while fn runs
	defer func() {
		if running == nil {
			return
		}
		// fn called runtime.Goexit: this goroutine ends locked, so its
		// thread is destroyed; release the caller.
		t.busy.Add(-1)
		running.err = ErrGoexit
		close(running.done)
		t.mu.Lock()
		t.workers--
		t.mu.Unlock()
		t.logger.Warn("sandbox tenant function called runtime.Goexit; thread discarded", "tid", tid)
	}()
	w := &worker{jobs: make(chan *job, 1)}
	timer := time.NewTimer(t.idleTimeout)
	defer timer.Stop()
	j := first
	for {
		t.busy.Add(1)
		t.runs.Add(1)
		running = j
		j.err = callFn(j.fn)
		running = nil
		verr := th.verifyTenant()
		if verr != nil && j.err == nil {
			j.err = verr
		}
		t.busy.Add(-1)
		if verr != nil {
			close(j.done)
			t.logger.Error("sandbox worker identity changed; thread discarded", "tid", tid, "err", verr)
			t.mu.Lock()
			t.workers--
			if j := t.dequeue(); j != nil {
				// Hand the next waiting job to a fresh worker.
				t.workers++
				t.started.Add(1)
				go t.worker(j)
			}
			t.mu.Unlock()
			return
		}
		// Take the next queued job or become idle before releasing the
		// caller, so that a caller that Runs again finds this worker.
		t.mu.Lock()
		next := t.dequeue()
		if next == nil && t.closed.Load() {
			t.workers--
			t.mu.Unlock()
			close(j.done)
			t.logger.Debug("sandbox worker exiting (closed)", "tid", tid)
			return
		}
		if next == nil {
			t.idle = append(t.idle, w)
		}
		t.mu.Unlock()
		close(j.done)
		if j = next; j != nil {
			continue
		}

		timer.Reset(t.idleTimeout)
		select {
		case j = <-w.jobs:
		case <-timer.C:
			t.mu.Lock()
			if i := slices.Index(t.idle, w); i >= 0 {
				t.idle = slices.Delete(t.idle, i, i+1)
				t.workers--
				t.mu.Unlock()
				t.logger.Debug("sandbox worker exiting (idle)", "tid", tid)
				return
			}
			t.mu.Unlock()
			// A Run popped this worker just as the timer fired: its job
			// (or Close's nil) is on the way.
			j = <-w.jobs
		}
		if j == nil {
			t.logger.Debug("sandbox worker exiting (closed)", "tid", tid)
			return
		}
		timer.Stop() // Go 1.23+ timers: Reset after Stop needs no drain
		j.state.Store(jobStarted)
	}
}

// runThreadPerRequest runs fn on a new goroutine whose locked thread is
// switched to the tenant and destroyed when the goroutine exits.
func (t *Tenant) runThreadPerRequest(fn func()) error {
	t.mu.Lock()
	if t.closed.Load() {
		t.mu.Unlock()
		return ErrClosed
	}
	t.workers++
	t.mu.Unlock()
	t.started.Add(1)
	j := &job{fn: fn, done: make(chan struct{})}
	go t.oneShot(j)
	<-j.done
	return j.err
}

// oneShot is a thread-per-request goroutine; it exits with its thread
// locked, so Go destroys the thread.
func (t *Tenant) oneShot(j *job) {
	runtime.LockOSThread()
	if onMainThread() {
		t.logger.Warn("sandbox worker landed on the main thread; parking it (call runtime.LockOSThread in main's init)")
		go t.oneShot(j)
		select {}
	}
	running := false
	defer func() {
		if running { // fn called runtime.Goexit
			t.busy.Add(-1)
			j.err = ErrGoexit
		}
		t.mu.Lock()
		t.workers--
		t.mu.Unlock()
		close(j.done)
	}()
	th, err := enterTenant(&t.id)
	if err != nil {
		t.logger.Error("sandbox thread could not switch to the tenant; thread discarded", "err", err)
		j.err = err
		return
	}
	t.runs.Add(1)
	t.busy.Add(1)
	running = true
	j.err = callFn(j.fn)
	running = false
	t.busy.Add(-1)
	if verr := th.verifyTenant(); verr != nil && j.err == nil {
		j.err = verr
	}
}

// sortedGroups returns a sorted copy of groups without duplicates, the form
// the kernel reports them in.
func sortedGroups(groups []uint32) []uint32 {
	if len(groups) == 0 {
		return nil
	}
	g := slices.Clone(groups)
	slices.Sort(g)
	return slices.Compact(g)
}
