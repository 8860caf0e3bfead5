package host

import (
	"maps"
	"sync"

	"github.com/hostd/hostd/host/session"
	"github.com/hostd/hostd/scripting"
)

// tenantState is what a vhost keeps across reloads for as long as a vhost
// of its server_name is served, whatever else in its file changed: the
// shared dictionary (hostd.shared) and the compiled hooks, so that a hook
// whose new version does not compile keeps its last good version even in
// a rebuilt vhost. (Memory sessions and the max_concurrent counter are
// kept by name too: sessMem and limits.)
type tenantState struct {
	shared  *scripting.SharedDict
	scripts *scripting.ScriptStore
}

// tenantStates are the server's tenantStates by server name. The zero
// value is ready; it is safe for concurrent use.
type tenantStates struct {
	mu sync.Mutex
	m  map[string]*tenantState
}

// get returns the state of the vhost name, made on first use.
func (ts *tenantStates) get(name string) *tenantState {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if st, ok := ts.m[name]; ok {
		return st
	}
	if ts.m == nil {
		ts.m = make(map[string]*tenantState)
	}
	st := &tenantState{shared: scripting.NewSharedDict(0), scripts: new(scripting.ScriptStore)}
	ts.m[name] = st
	return st
}

// forget drops the state of every name not in keep: a vhost a reload
// removed starts afresh if it comes back. Vhosts still draining keep
// what they hold.
func (ts *tenantStates) forget(keep func(name string) bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	maps.DeleteFunc(ts.m, func(name string, _ *tenantState) bool { return !keep(name) })
}

// forget drops the memory session stores of every name not in keep.
func (ms *memoryStores) forget(keep func(name string) bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	maps.DeleteFunc(ms.m, func(name string, _ *session.Memory) bool { return !keep(name) })
}
