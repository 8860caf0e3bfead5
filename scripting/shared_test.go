package scripting

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSharedDictBudget: keys and values count against the byte budget,
// and deletes, overwrites and expiry give the bytes back.
func TestSharedDictBudget(t *testing.T) {
	d := NewSharedDict(0)
	d.SetMaxBytes(10 << 10)
	now := time.Unix(1000, 0)
	d.now = func() time.Time { return now }
	v := strings.Repeat("x", 4<<10)
	if err := d.Set("a", v, 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Set("b", v, time.Second); err != nil {
		t.Fatal(err)
	}
	err := d.Set("c", v, 0)
	if !errors.Is(err, ErrDictBudget) || !errors.Is(err, ErrDictFull) {
		t.Fatalf("third 4 KiB value in 10 KiB: %v, want ErrDictBudget", err)
	}
	if _, b, _ := d.Usage(); b != 2*entrySize("a", v) {
		t.Fatalf("bytes %d, want %d", b, 2*entrySize("a", v))
	}
	// Overwriting with a smaller value fits and frees the difference.
	if err := d.Set("a", "small", 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Set("c", v, 0); err != nil {
		t.Fatalf("after shrinking a: %v", err)
	}
	if err := d.Set("d", v, 0); !errors.Is(err, ErrDictBudget) {
		t.Fatalf("over again: %v", err)
	}
	// An expired key's bytes come back on the next set that needs them.
	now = now.Add(2 * time.Second)
	if err := d.Set("d", v, 0); err != nil {
		t.Fatalf("after b expired: %v", err)
	}
	d.Delete("c")
	d.Delete("d")
	if err := d.Set("a", nil, 0); err != nil {
		t.Fatal(err)
	}
	if k, b, mb := d.Usage(); k != 0 || b != 0 || mb != 10<<10 {
		t.Fatalf("empty dictionary: %d keys, %d bytes, budget %d", k, b, mb)
	}
	// incr counts a new key.
	d.SetMaxBytes(dictEntryOverhead + 1)
	if _, err := d.Incr("n", 1, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Incr("m", 1, 0, 0); !errors.Is(err, ErrDictBudget) {
		t.Fatalf("incr of a new key over the budget: %v", err)
	}
}

// TestSharedDictPinnedMemory is the reproduction of issue 13: 10,000 sets
// of 64 KiB pinned 640 MiB; the default budget keeps 16 MiB.
func TestSharedDictPinnedMemory(t *testing.T) {
	d := NewSharedDict(0)
	v := strings.Repeat("x", MaxDictValue)
	stored := 0
	for i := range 10000 {
		if err := d.Set(strings.Repeat("k", 1+i%200)+string(rune('a'+i%26))+time.Duration(i).String(), v, 0); err != nil {
			if !errors.Is(err, ErrDictBudget) {
				t.Fatal(err)
			}
			continue
		}
		stored++
	}
	if _, b, _ := d.Usage(); b > DefaultSharedDictSize || stored > DefaultSharedDictSize/MaxDictValue {
		t.Fatalf("%d values stored, %d bytes, budget %d", stored, b, DefaultSharedDictSize)
	}
}

// TestSharedDictExpiryBound: a full dictionary still frees the keys that
// expired, whichever way their time to live was set (set, expire, a
// shortened and a lengthened ttl, a ttl removed by an overwrite).
func TestSharedDictExpiryBound(t *testing.T) {
	d := NewSharedDict(3)
	now := time.Unix(1000, 0)
	d.now = func() time.Time { return now }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.Set("a", "1", 10*time.Second))
	must(d.Set("b", "1", 2*time.Second))
	must(d.Set("c", "1", 0))
	if err := d.Set("d", "1", 0); !errors.Is(err, ErrDictFull) {
		t.Fatalf("fourth key in three: %v", err)
	}
	now = now.Add(3 * time.Second) // b expired
	must(d.Set("d", "1", 0))
	if d.Get("b") != nil || d.Get("a") != "1" {
		t.Fatalf("after b expired: a=%v b=%v", d.Get("a"), d.Get("b"))
	}
	d.Expire("a", time.Second) // shortened
	now = now.Add(1500 * time.Millisecond)
	must(d.Set("e", "1", 20*time.Second))
	if d.Get("a") != nil {
		t.Fatal("a outlived its shortened ttl")
	}
	d.Expire("e", time.Hour) // lengthened: e stays
	must(d.Set("c", "2", 5*time.Second))
	must(d.Set("c", "3", 0)) // the ttl removed by an overwrite
	now = now.Add(time.Minute)
	if err := d.Set("f", "1", 0); !errors.Is(err, ErrDictFull) {
		t.Fatalf("c, d, e are live: %v", err)
	}
	now = now.Add(2 * time.Hour) // e expired
	must(d.Set("f", "1", 0))
	if k, _, _ := d.Usage(); k != 3 || d.Get("e") != nil {
		t.Fatalf("%d keys, e=%v", k, d.Get("e"))
	}
}

// BenchmarkSharedDictFullSet is a hook writing to a full dictionary of
// 10,000 live keys, half with a time to live: each write fails.
func BenchmarkSharedDictFullSet(b *testing.B) {
	d := NewSharedDict(10000)
	for i := range 10000 {
		ttl := time.Duration(0)
		if i%2 == 0 {
			ttl = time.Hour
		}
		if err := d.Set(strings.Repeat("k", 1+i%200)+string(rune('a'+i%26))+time.Duration(i).String(), "v", ttl); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if err := d.Set("new", "v", 0); !errors.Is(err, ErrDictFull) {
			b.Fatal(err)
		}
	}
}
