package scripting

import "sync/atomic"

// VMPool keeps an engine's idle VMs (at most its capacity) for reuse by
// later runs. It is safe for concurrent use.
type VMPool[V any] struct {
	idle   chan V
	free   func(V)
	closed atomic.Bool
}

// NewVMPool returns a pool keeping at most max idle VMs; free frees a VM
// the pool does not keep.
func NewVMPool[V any](max int, free func(V)) *VMPool[V] {
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
