package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostd/hostd/scripting"
)

// Store keeps session data by key with a time to live. Implementations are
// safe for concurrent use. Errors other than ErrNotFound mean the store
// could not be used.
type Store interface {
	// Load returns the data under key and extends its time to live to ttl
	// (sliding expiry), or ErrNotFound.
	Load(ctx context.Context, key string, ttl time.Duration) ([]byte, error)
	// Save stores data under key for ttl, replacing it as a whole.
	Save(ctx context.Context, key string, data []byte, ttl time.Duration) error
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// String names the store for logs, e.g. "redis 127.0.0.1:6379".
	String() string
	// Close releases the store's connections.
	Close() error
}

// ErrNotFound is returned by Store.Load for a missing or expired key.
var ErrNotFound = errors.New("session: not found")

// DefaultTimeout bounds one store call when Options.Timeout is zero.
const DefaultTimeout = 500 * time.Millisecond

// unavailable wraps a store failure so that it names the store and
// matches scripting.ErrSessionUnavailable.
func unavailable(s Store, op string, err error) error {
	return fmt.Errorf("session store %s: %s: %w (%w)", s, op, scripting.ErrSessionUnavailable, err)
}

// ttlSeconds rounds ttl up to whole seconds, at least 1.
func ttlSeconds(ttl time.Duration) int32 {
	s := (ttl + time.Second - 1) / time.Second
	if s < 1 {
		s = 1
	}
	return int32(min(s, 30*24*3600)) // memcached: larger means a timestamp
}
