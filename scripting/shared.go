package scripting

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// SharedDict is a tenant's shared dictionary (hostd.shared in hooks), like
// nginx's ngx.shared.DICT: string keys, values of type string, float64,
// int64 or bool, each with an optional time to live. It is safe for
// concurrent use by all of the tenant's workers. It holds at most
// MaxEntries keys; a Set past that evicts expired keys first and then
// fails with ErrDictFull.
type SharedDict struct {
	maxEntries int
	now        func() time.Time

	mu sync.Mutex
	m  map[string]dictEntry
}

type dictEntry struct {
	v   any
	exp time.Time // zero: no expiry
}

// ErrDictFull is returned by SharedDict.Set when the dictionary is full.
var ErrDictFull = errors.New("scripting: shared dictionary is full")

// MaxDictKey is the longest key a SharedDict accepts, and MaxDictValue the
// longest string value.
const (
	MaxDictKey   = 250
	MaxDictValue = 64 << 10
)

// NewSharedDict returns an empty dictionary holding at most maxEntries keys
// (default 10000 when maxEntries <= 0).
func NewSharedDict(maxEntries int) *SharedDict {
	if maxEntries <= 0 {
		maxEntries = 10000
	}
	return &SharedDict{maxEntries: maxEntries, now: time.Now, m: make(map[string]dictEntry)}
}

func checkDict(key string, v any) error {
	if key == "" || len(key) > MaxDictKey {
		return fmt.Errorf("shared dict: key must be 1 to %d bytes", MaxDictKey)
	}
	switch x := v.(type) {
	case nil, bool, float64, int64:
	case string:
		if len(x) > MaxDictValue {
			return fmt.Errorf("shared dict: value of %d bytes exceeds %d", len(x), MaxDictValue)
		}
	default:
		return fmt.Errorf("shared dict: unsupported value type %T", v)
	}
	return nil
}

// Get returns the value of key, or nil when it is absent or expired.
func (d *SharedDict) Get(key string) any {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.m[key]
	if !ok {
		return nil
	}
	if !e.exp.IsZero() && !d.now().Before(e.exp) {
		delete(d.m, key)
		return nil
	}
	return e.v
}

// Set stores v under key for ttl (0: no expiry). A nil v deletes key.
func (d *SharedDict) Set(key string, v any, ttl time.Duration) error {
	if err := checkDict(key, v); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.storeLocked(key, v, d.expiry(ttl))
}

// storeLocked stores v under key with expiry exp (zero: none); a nil v
// deletes key. d.mu is held; key and v are checked.
func (d *SharedDict) storeLocked(key string, v any, exp time.Time) error {
	if v == nil {
		delete(d.m, key)
		return nil
	}
	if _, ok := d.m[key]; !ok && len(d.m) >= d.maxEntries {
		d.evictExpiredLocked()
		if len(d.m) >= d.maxEntries {
			return ErrDictFull
		}
	}
	d.m[key] = dictEntry{v: v, exp: exp}
	return nil
}

// Incr adds delta to the number stored under key and returns the result.
// An absent or expired key starts at init and gets ttl (0: no expiry); an
// existing key keeps its expiry. A non-numeric value is an error.
func (d *SharedDict) Incr(key string, delta, init float64, ttl time.Duration) (float64, error) {
	if err := checkDict(key, nil); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.m[key]
	if ok && !e.exp.IsZero() && !d.now().Before(e.exp) {
		ok = false
	}
	if !ok {
		if len(d.m) >= d.maxEntries {
			d.evictExpiredLocked()
			if len(d.m) >= d.maxEntries {
				return 0, ErrDictFull
			}
		}
		e = dictEntry{v: init, exp: d.expiry(ttl)}
	}
	var n float64
	switch x := e.v.(type) {
	case float64:
		n = x
	case int64:
		n = float64(x)
	default:
		return 0, fmt.Errorf("shared dict: incr of non-number key %q", key)
	}
	n += delta
	e.v = n
	d.m[key] = e
	return n, nil
}

// Delete removes key.
func (d *SharedDict) Delete(key string) {
	d.mu.Lock()
	delete(d.m, key)
	d.mu.Unlock()
}

// Len returns the number of keys, expired ones included until evicted.
func (d *SharedDict) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.m)
}

func (d *SharedDict) expiry(ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return d.now().Add(ttl)
}

func (d *SharedDict) evictExpiredLocked() {
	now := d.now()
	for k, e := range d.m {
		if !e.exp.IsZero() && !now.Before(e.exp) {
			delete(d.m, k)
		}
	}
}
