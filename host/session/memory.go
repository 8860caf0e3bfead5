package session

import (
	"context"
	"errors"
	"sync"
	"time"
)

// DefaultMaxEntries bounds a Memory store when NewMemory gets 0.
const DefaultMaxEntries = 100000

// Memory is a Store in the process's memory: sessions live on one node and
// are lost on restart. It is safe for concurrent use and starts no
// goroutines; expired entries are removed as they are met and by a sweep
// when the store is full.
type Memory struct {
	mu  sync.Mutex
	m   map[string]memItem
	max int
	now func() time.Time
}

type memItem struct {
	data    []byte
	expires time.Time
}

// NewMemory returns a memory store holding at most maxEntries sessions
// (0: DefaultMaxEntries).
func NewMemory(maxEntries int) *Memory {
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	return &Memory{m: make(map[string]memItem), max: maxEntries, now: time.Now}
}

// ErrFull is returned by Memory.Save when the store holds its maximum of
// live sessions.
var ErrFull = errors.New("session: memory store is full")

func (s *Memory) Load(ctx context.Context, key string, ttl time.Duration) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	it, ok := s.m[key]
	if !ok || !now.Before(it.expires) {
		delete(s.m, key)
		return nil, ErrNotFound
	}
	it.expires = now.Add(ttl)
	s.m[key] = it
	return it.data, nil
}

func (s *Memory) Save(ctx context.Context, key string, data []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if _, ok := s.m[key]; !ok && len(s.m) >= s.max {
		for k, it := range s.m {
			if !now.Before(it.expires) {
				delete(s.m, k)
			}
		}
		if len(s.m) >= s.max {
			return ErrFull
		}
	}
	s.m[key] = memItem{data: append([]byte(nil), data...), expires: now.Add(ttl)}
	return nil
}

func (s *Memory) Delete(ctx context.Context, key string) error {
	s.mu.Lock()
	delete(s.m, key)
	s.mu.Unlock()
	return nil
}

// Len returns the number of stored (possibly expired) sessions.
func (s *Memory) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

func (s *Memory) String() string { return "memory" }
func (s *Memory) Close() error   { return nil }
