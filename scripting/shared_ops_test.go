package scripting

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestSharedDictOps(t *testing.T) {
	now := time.Unix(1000, 0)
	d := NewSharedDict(3)
	d.now = func() time.Time { return now }

	if ok, err := d.Add("a", "1", 0); !ok || err != nil {
		t.Fatalf("Add new: %v %v", ok, err)
	}
	if ok, _ := d.Add("a", "2", 0); ok || d.Get("a") != "1" {
		t.Errorf("Add existing stored: %v %v", ok, d.Get("a"))
	}
	if ok, _ := d.Replace("b", "x", 0); ok || d.Get("b") != nil {
		t.Error("Replace of an absent key stored")
	}
	if ok, _ := d.Replace("a", "3", 10*time.Second); !ok || d.Get("a") != "3" {
		t.Error("Replace of a present key did not store")
	}
	if ttl, ok := d.TTL("a"); !ok || ttl != 10*time.Second {
		t.Errorf("TTL = %v %v", ttl, ok)
	}
	if _, ok := d.TTL("none"); ok {
		t.Error("TTL of an absent key")
	}
	if !d.Expire("a", 0) {
		t.Error("Expire of a present key")
	}
	if ttl, ok := d.TTL("a"); !ok || ttl != 0 {
		t.Errorf("TTL after Expire(0) = %v %v", ttl, ok)
	}
	if d.Expire("none", time.Second) {
		t.Error("Expire of an absent key")
	}
	d.Set("b", 1.0, time.Second)
	d.Set("c", int64(2), 0)
	if got := d.Keys(0); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("Keys(0) = %v", got)
	}
	if got := d.Keys(2); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Keys(2) = %v", got)
	}
	now = now.Add(2 * time.Second) // b expires
	if got := d.Keys(0); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("Keys after expiry = %v", got)
	}
	if ok, _ := d.Add("b", "again", 0); !ok {
		t.Error("Add over an expired key did not store")
	}
	// Full: Add of a new key fails with ErrDictFull.
	if _, err := d.Add("d", "x", 0); err != ErrDictFull {
		t.Errorf("Add to a full dict: %v", err)
	}
	// SetIf: numbers compare by value, nil means absent.
	if ok, _ := d.SetIf("c", 2.0, int64(3), 0); !ok || d.Get("c") != int64(3) {
		t.Errorf("SetIf(2.0 == int64 2) did not store: %v", d.Get("c"))
	}
	if ok, _ := d.SetIf("c", 2.0, int64(4), 0); ok {
		t.Error("SetIf with a stale old value stored")
	}
	if ok, _ := d.SetIf("c", int64(3), nil, 0); !ok || d.Get("c") != nil {
		t.Error("SetIf to nil did not delete")
	}
	if ok, _ := d.SetIf("c", nil, "new", 0); !ok || d.Get("c") != "new" {
		t.Error("SetIf(absent) did not store")
	}
	if ok, _ := d.SetIf("c", nil, "newer", 0); ok {
		t.Error("SetIf(absent) stored over a present key")
	}
	if _, err := d.SetIf("c", []any{1}, "x", 0); err == nil {
		t.Error("SetIf with an unsupported old value")
	}
}

// TestSharedDictSetIfConcurrent: concurrent read-modify-write loops with
// SetIf lose no update.
func TestSharedDictSetIfConcurrent(t *testing.T) {
	d := NewSharedDict(0)
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				for {
					old := d.Get("list")
					s, _ := old.(string)
					if ok, err := d.SetIf("list", old, s+"x", 0); err != nil {
						t.Error(err)
						return
					} else if ok {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	if got := len(d.Get("list").(string)); got != workers*each {
		t.Errorf("appended %d, want %d", got, workers*each)
	}
}
