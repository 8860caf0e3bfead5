package scripting

import (
	"context"
	"errors"
)

// Session is a request's session (r.session in hooks): a small map of
// JSON-able values kept in a store across requests and nodes, found again
// through a cookie. host implements it (with host/session); an
// engine calls it only from the goroutine that runs the hook. Every
// method may do network I/O bounded by ctx and the store's timeout; a
// store that cannot be reached makes it fail with an error wrapping
// ErrSessionUnavailable.
type Session interface {
	// Get returns the value of key, or nil. Values are JSON-able: nil,
	// bool, float64, int64, string, []any, map[string]any.
	Get(ctx context.Context, key string) (any, error)
	// Set stores v under key (nil deletes it). It fails with an error
	// wrapping ErrSessionTooLarge when the session's JSON encoding would
	// exceed the size limit, leaving the session unchanged.
	Set(ctx context.Context, key string, v any) error
	// Delete removes key.
	Delete(ctx context.Context, key string) error
	// Destroy removes the session from the store and expires its cookie.
	Destroy(ctx context.Context) error
	// RegenerateID moves the session to a new, random id (after a login)
	// and removes the old one.
	RegenerateID(ctx context.Context) error
}

// Session errors.
var (
	// ErrSessionUnavailable means the session store could not be reached;
	// host answers 503.
	ErrSessionUnavailable = errors.New("scripting: session store unavailable")
	// ErrSessionTooLarge means a Set would exceed the session size limit.
	ErrSessionTooLarge = errors.New("scripting: session too large")
	// ErrNoSession means the request has no session support (e.g. a log
	// phase writing to it).
	ErrNoSession = errors.New("scripting: no session for this request")
)
