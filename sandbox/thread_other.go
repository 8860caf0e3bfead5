//go:build !linux

package sandbox

import "log/slog"

const switchSupported = false

type threadState struct{ tid int }

func onMainThread() bool { return false }

func enterTenant(id *Identity) (*threadState, error) { return nil, ErrUnsupported }

func (th *threadState) verifyTenant() error { return ErrUnsupported }

func runInline(id *Identity, fn func(), logger *slog.Logger) error { return ErrUnsupported }

// OnMainThread reports false: per-thread identities need Linux.
func OnMainThread() bool { return false }
