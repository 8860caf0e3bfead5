package lua

import (
	"context"
	"time"
)

// runCtx is the context a run's VM checks: gopher-lua calls Done before
// every instruction, and runCtx answers from a counter, looking at the
// clock and the parent context only every checkEvery calls (or on the next
// call after a host function did heavy work, see poke). This costs no
// allocation, timer or goroutine per run, unlike context.WithTimeout. A
// runCtx belongs to one VM and is used only by the goroutine running it.
type runCtx struct {
	parent   context.Context
	deadline time.Time
	n        uint32
	err      error
	closed   chan struct{} // closed at VM creation: Done once expired
}

// checkEvery is how many Done calls (VM instructions) may pass between two
// looks at the clock.
const checkEvery = 64

var _ context.Context = (*runCtx)(nil)

func (c *runCtx) reset(parent context.Context, timeout time.Duration) {
	c.parent = parent
	c.deadline = time.Now().Add(timeout)
	if d, ok := parent.Deadline(); ok && d.Before(c.deadline) {
		c.deadline = d
	}
	c.n = 0
	c.err = nil
}

func (c *runCtx) check() {
	if c.err != nil {
		return
	}
	if err := c.parent.Err(); err != nil {
		c.err = err
	} else if !time.Now().Before(c.deadline) {
		c.err = context.DeadlineExceeded
	}
}

// poke makes the next Done call check the clock.
func (c *runCtx) poke() { c.n = checkEvery - 1 }

func (c *runCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *runCtx) Done() <-chan struct{} {
	if c.err == nil {
		c.n++
		if c.n < checkEvery {
			return nil
		}
		c.n = 0
		c.check()
		if c.err == nil {
			return nil
		}
	}
	return c.closed
}

func (c *runCtx) Err() error {
	c.check()
	return c.err
}

func (c *runCtx) Value(key any) any { return c.parent.Value(key) }
