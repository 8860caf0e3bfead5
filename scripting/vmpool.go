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
