package scripting

import "sync/atomic"

// VMPool keeps an engine's idle VMs (at most its capacity) for reuse by
// later runs. It is safe for concurrent use.
type VMPool[V any] struct {
	idle   chan V
	free   func(V)
	closed atomic.Bool
}

// NewVMPool returns a pool keeping at most max idle VMs (DefaultMaxVMs
// when max <= 0); free frees a VM the pool does not keep.
func NewVMPool[V any](max int, free func(V)) *VMPool[V] {
	if max <= 0 {
		max = DefaultMaxVMs
	}
	return &VMPool[V]{idle: make(chan V, max), free: free}
}

// Get returns an idle VM, or ok false when there is none.
func (p *VMPool[V]) Get() (v V, ok bool) {
	select {
	case v = <-p.idle:
		return v, true
	default:
		return v, false
	}
}

// Put keeps v for reuse, or frees it when the pool is full or closed.
func (p *VMPool[V]) Put(v V) {
	if p.closed.Load() {
		p.free(v)
		return
	}
	select {
	case p.idle <- v:
	default:
		p.free(v)
	}
}

// Closed reports whether Close was called.
func (p *VMPool[V]) Closed() bool { return p.closed.Load() }

// Close frees the idle VMs; VMs put back later are freed by Put.
func (p *VMPool[V]) Close() {
	p.closed.Store(true)
	for {
		select {
		case v := <-p.idle:
			p.free(v)
		default:
			return
		}
	}
}

// EngineParts returns what every engine makes the same way of its Config:
// cfg with its defaults, the language's compiled-script cache (lang names
// it in cfg.Scripts) and the VM pool, which is pool when the engine shares
// one (an engine of a Pool of many tenants') or else its own of cfg.MaxVMs.
func EngineParts[S, V any](cfg Config, lang string, pool *VMPool[V], free func(V)) (Config, *ScriptCache[S], *VMPool[V]) {
	cfg = cfg.WithDefaults()
	if pool == nil {
		pool = NewVMPool(cfg.MaxVMs, free)
	}
	return cfg, CacheFor[S](cfg.Scripts, lang), pool
}

// SharedPool is an engine package's Pool: VMs shared by the engines of
// many tenants (one pool per server, as mod_mruby keeps one interpreter
// per process), each engine made by the package on the pool's VMs. It is
// safe for concurrent use.
type SharedPool[V, E any] struct {
	vms    *VMPool[V]
	engine func(Config, *VMPool[V]) E
}

// NewSharedPool returns a pool keeping at most maxIdle idle VMs (default
// DefaultMaxVMs; more are made while more runs are in progress), freed
// with free; engine makes an engine of a Config on the pool's VMs.
func NewSharedPool[V, E any](maxIdle int, free func(V), engine func(Config, *VMPool[V]) E) *SharedPool[V, E] {
	return &SharedPool[V, E]{vms: NewVMPool(maxIdle, free), engine: engine}
}

// Engine returns a tenant's engine whose runs use the pool's VMs. Zero
// fields of cfg take their defaults; cfg.MaxVMs is ignored.
func (p *SharedPool[V, E]) Engine(cfg Config) E { return p.engine(cfg, p.vms) }

// Close frees the idle VMs; VMs of runs in progress are freed when they
// end. The pool's engines must not run afterwards.
func (p *SharedPool[V, E]) Close() { p.vms.Close() }
