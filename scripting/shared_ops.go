package scripting

import (
	"slices"
	"time"
)

// The operations of issue 16 part B, after nginx's ngx.shared.DICT: add,
// replace, ttl, expire, get_keys and a compare-and-set. Each is atomic.

// lookupLocked returns key's live entry; an expired one is deleted. d.mu
// is held.
func (d *SharedDict) lookupLocked(key string) (dictEntry, bool) {
	e, ok := d.m[key]
	if ok && !e.exp.IsZero() && !d.now().Before(e.exp) {
		d.removeLocked(key)
		return dictEntry{}, false
	}
	return e, ok
}

// storeLocked stores v under key with expiry exp (zero: none), within the
// key and byte limits (putLocked); a nil v deletes key. d.mu is held; key
// and v are checked.
func (d *SharedDict) storeLocked(key string, v any, exp time.Time) error {
	if v == nil {
		d.removeLocked(key)
		return nil
	}
	return d.putLocked(key, dictEntry{v: v, exp: exp})
}

// Add stores v under key for ttl only when key is absent (or expired); it
// reports whether it stored. A full dictionary is ErrDictFull.
func (d *SharedDict) Add(key string, v any, ttl time.Duration) (bool, error) {
	if err := checkDict(key, v); err != nil {
		return false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.lookupLocked(key); ok {
		return false, nil
	}
	if v == nil {
		return true, nil
	}
	return true, d.storeLocked(key, v, d.expiry(ttl))
}

// Replace stores v under key for ttl only when key is present; it reports
// whether it stored. A nil v deletes a present key.
func (d *SharedDict) Replace(key string, v any, ttl time.Duration) (bool, error) {
	if err := checkDict(key, v); err != nil {
		return false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.lookupLocked(key); !ok {
		return false, nil
	}
	return true, d.storeLocked(key, v, d.expiry(ttl))
}

// TTL returns the time key has left (0: no expiry); ok is false when key
// is absent or expired.
func (d *SharedDict) TTL(key string) (ttl time.Duration, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.lookupLocked(key)
	if !ok || e.exp.IsZero() {
		return 0, ok
	}
	return max(e.exp.Sub(d.now()), time.Nanosecond), true
}

// Expire gives a present key a new time to live (0: none); it reports
// whether key was present.
func (d *SharedDict) Expire(key string, ttl time.Duration) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.lookupLocked(key)
	if !ok {
		return false
	}
	e.exp = d.expiry(ttl)
	d.m[key] = e
	d.noteExpiryLocked(e.exp)
	return true
}

// Keys returns at most max live keys (max <= 0: all), sorted.
func (d *SharedDict) Keys(max int) []string {
	d.mu.Lock()
	now := d.now()
	keys := make([]string, 0, len(d.m))
	for k, e := range d.m {
		if e.exp.IsZero() || now.Before(e.exp) {
			keys = append(keys, k)
		}
	}
	d.mu.Unlock()
	slices.Sort(keys)
	if max > 0 && len(keys) > max {
		keys = keys[:max:max]
	}
	return keys
}

// SetIf stores v under key for ttl only when key's current value equals
// old (nil: key absent; numbers compare by value); a nil v deletes. It
// reports whether it stored: a compare-and-set, so that read-modify-write
// of a value (a counter of another shape, an appended list) does not lose
// concurrent updates.
func (d *SharedDict) SetIf(key string, old, v any, ttl time.Duration) (bool, error) {
	if err := checkDict(key, v); err != nil {
		return false, err
	}
	if err := checkDict(key, old); err != nil {
		return false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.lookupLocked(key)
	var cur any
	if ok {
		cur = e.v
	}
	if !sameValue(cur, old) {
		return false, nil
	}
	return true, d.storeLocked(key, v, d.expiry(ttl))
}

// sameValue compares dictionary values; int64 and float64 by value.
func sameValue(a, b any) bool {
	fa, aNum := asFloat(a)
	fb, bNum := asFloat(b)
	if aNum || bNum {
		return aNum && bNum && fa == fb
	}
	return a == b
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	}
	return 0, false
}
