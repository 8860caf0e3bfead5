package session

import "time"

// SetClock makes m read the time from now (tests pass a fake clock).
func SetClock(m *Memory, now func() time.Time) {
	m.mu.Lock()
	m.now = now
	m.mu.Unlock()
}
