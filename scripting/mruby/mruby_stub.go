//go:build nomruby || !cgo

package mruby

import (
	"context"
	"fmt"

	"github.com/hostd/hostd/scripting"
)

// Engine is the stand-in for the mruby engine in builds without mruby: Run
// and Check fail with an error wrapping scripting.ErrNotSupported.
type Engine struct{}

var _ scripting.Engine = (*Engine)(nil)

var errNoMruby = fmt.Errorf("hostd was built without mruby (tag nomruby): .rb hooks are not available: %w", scripting.ErrNotSupported)

// Available reports whether mruby is built in.
const Available = false

// New returns an engine whose Run and Check fail.
func New(cfg scripting.Config) *Engine { return &Engine{} }

// Run fails with an error wrapping scripting.ErrNotSupported.
func (e *Engine) Run(ctx context.Context, phase scripting.Phase, path string, req scripting.Request) (scripting.Result, error) {
	return scripting.Result{}, errNoMruby
}

// Check fails with an error wrapping scripting.ErrNotSupported.
func (e *Engine) Check(path string) error { return errNoMruby }

// Close does nothing.
func (e *Engine) Close() error { return nil }

// Pool is the stand-in for the shared mruby VMs in builds without mruby.
type Pool struct{}

// NewPool returns a pool whose engines fail like New's.
func NewPool(maxIdle int) *Pool { return &Pool{} }

// Engine returns an engine whose Run and Check fail.
func (p *Pool) Engine(cfg scripting.Config) *Engine { return &Engine{} }

// Close does nothing.
func (p *Pool) Close() {}

// Language returns the mruby hook language (.rb files) of a build without
// mruby: its engines fail with Err, which wraps scripting.ErrNotSupported.
func Language() scripting.Language {
	l := scripting.LanguageOf(".rb", New, NewPool)
	l.Err = errNoMruby
	return l
}
