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
// MaxEntries keys and a byte budget (keys and values, see entrySize); a
// Set past either evicts expired keys first and then fails with
// ErrDictFull (ErrDictBudget for the bytes).
type SharedDict struct {
	maxEntries int
	now        func() time.Time

	mu       sync.Mutex
	m        map[string]dictEntry
	bytes    int64 // entrySize of every entry in m
	maxBytes int64
	// nextExp is no later than the earliest expiry in m (zero: no entry
	// expires): before it, evicting expired keys finds none, so a write
	// to a full dictionary fails without a scan.
	nextExp time.Time
}

type dictEntry struct {
	v   any
	exp time.Time // zero: no expiry
}

// ErrDictFull is returned by SharedDict.Set when the dictionary is full.
var ErrDictFull = errors.New("scripting: shared dictionary is full")

// ErrDictBudget is returned by SharedDict.Set when the new value would
// take the dictionary past its byte budget; it wraps ErrDictFull.
var ErrDictBudget = fmt.Errorf("%w: over its byte budget (shared_dict_size)", ErrDictFull)

// DefaultSharedDictSize is the byte budget of a SharedDict made by
// NewSharedDict.
const DefaultSharedDictSize = 16 << 20

// dictEntryOverhead is what an entry costs besides its key and value
// bytes: the map slot, the entry and the string headers.
const dictEntryOverhead = 64

// entrySize is what key and v count against the byte budget.
func entrySize(key string, v any) int64 {
	n := int64(len(key)) + dictEntryOverhead
	if s, ok := v.(string); ok {
		n += int64(len(s))
	}
	return n
}

// MaxDictKey is the longest key a SharedDict accepts, and MaxDictValue the
// longest string value.
const (
	MaxDictKey   = 250
	MaxDictValue = 64 << 10
)

// NewSharedDict returns an empty dictionary holding at most maxEntries keys
// (default 10000 when maxEntries <= 0) and DefaultSharedDictSize bytes.
func NewSharedDict(maxEntries int) *SharedDict {
	if maxEntries <= 0 {
		maxEntries = 10000
	}
	return &SharedDict{maxEntries: maxEntries, now: time.Now, m: make(map[string]dictEntry), maxBytes: DefaultSharedDictSize}
}

// SetMaxBytes sets the byte budget (DefaultSharedDictSize when n <= 0).
// Entries already stored stay; while they are over a smaller budget, sets
// that add bytes fail.
func (d *SharedDict) SetMaxBytes(n int64) {
	if n <= 0 {
		n = DefaultSharedDictSize
	}
	d.mu.Lock()
	d.maxBytes = n
	d.mu.Unlock()
}

// Usage returns the number of keys and the bytes they count against the
// budget (expired ones included until evicted), and the budget.
func (d *SharedDict) Usage() (keys int, bytes, maxBytes int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.m), d.bytes, d.maxBytes
}

// putLocked stores e under key, keeping the byte count: it fails with
// ErrDictFull or ErrDictBudget (after evicting expired keys) when the key
// is new and the dictionary holds maxEntries keys, or when the bytes
// would pass the budget.
func (d *SharedDict) putLocked(key string, e dictEntry) error {
	old, exists := d.m[key]
	grow := entrySize(key, e.v)
	if exists {
		grow -= entrySize(key, old.v)
	}
	if !exists && len(d.m) >= d.maxEntries || grow > 0 && d.bytes+grow > d.maxBytes {
		d.evictExpiredLocked()
		old, exists = d.m[key]
		grow = entrySize(key, e.v)
		if exists {
			grow -= entrySize(key, old.v)
		}
		if !exists && len(d.m) >= d.maxEntries {
			return ErrDictFull
		}
		if grow > 0 && d.bytes+grow > d.maxBytes {
			return ErrDictBudget
		}
	}
	d.m[key] = e
	d.bytes += grow
	d.noteExpiryLocked(e.exp)
	return nil
}

// noteExpiryLocked keeps nextExp at or before exp.
func (d *SharedDict) noteExpiryLocked(exp time.Time) {
	if !exp.IsZero() && (d.nextExp.IsZero() || exp.Before(d.nextExp)) {
		d.nextExp = exp
	}
}

// removeLocked deletes key, keeping the byte count.
func (d *SharedDict) removeLocked(key string) {
	if e, ok := d.m[key]; ok {
		d.bytes -= entrySize(key, e.v)
		delete(d.m, key)
	}
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
		d.removeLocked(key)
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
	if v == nil {
		d.removeLocked(key)
		return nil
	}
	return d.putLocked(key, dictEntry{v: v, exp: d.expiry(ttl)})
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
	if err := d.putLocked(key, e); err != nil {
		return 0, err
	}
	return n, nil
}

// Delete removes key.
func (d *SharedDict) Delete(key string) {
	d.mu.Lock()
	d.removeLocked(key)
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

// evictExpiredLocked deletes the expired keys. It scans only once the
// earliest expiry has passed, so a hook writing to a full dictionary of
// live keys pays no scan per failed write.
func (d *SharedDict) evictExpiredLocked() {
	now := d.now()
	if d.nextExp.IsZero() || now.Before(d.nextExp) {
		return
	}
	d.nextExp = time.Time{}
	for k, e := range d.m {
		if e.exp.IsZero() {
			continue
		}
		if !now.Before(e.exp) {
			d.removeLocked(k)
		} else {
			d.noteExpiryLocked(e.exp)
		}
	}
}
