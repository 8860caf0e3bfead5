package scripting

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Language describes one hook language to host: the file extension of
// its hooks and how to make its engines. Each engine package returns its
// own (lua.Language, mruby.Language); scripting/engines lists them.
type Language struct {
	// Ext is the extension of the language's hook files (".lua").
	Ext string
	// New returns a tenant's engine with VMs of its own.
	New func(Config) Engine
	// NewPool returns VMs shared by the engines it makes, at most maxIdle
	// of them idle.
	NewPool func(maxIdle int) Pool
	// Err is why the language is not built in (mruby under the nomruby
	// tag), wrapping ErrNotSupported; nil when it is. Its engines then
	// fail every Run and Check with Err.
	Err error
}

// Pool is a set of VMs shared by the engines of many tenants; it is safe
// for concurrent use.
type Pool interface {
	// Engine returns a tenant's engine whose runs use the pool's VMs.
	Engine(Config) Engine
	// Close frees the idle VMs; the pool's engines must not run afterwards.
	Close()
}

// enginePool is what an engine package's *Pool offers.
type enginePool[E Engine] interface {
	Engine(Config) E
	Close()
}

// LanguageOf returns the Language of the hook files ending in ext whose
// engines newEngine makes on their own VMs and newPool's pools make on
// shared ones (an engine package's New and NewPool).
func LanguageOf[E Engine, P enginePool[E]](ext string, newEngine func(Config) E, newPool func(maxIdle int) P) Language {
	return Language{
		Ext:     ext,
		New:     func(cfg Config) Engine { return newEngine(cfg) },
		NewPool: func(maxIdle int) Pool { return poolOf[E, P]{newPool(maxIdle)} },
	}
}

type poolOf[E Engine, P enginePool[E]] struct{ p P }

func (p poolOf[E, P]) Engine(cfg Config) Engine { return p.p.Engine(cfg) }
func (p poolOf[E, P]) Close()                   { p.p.Close() }

// Engines are the hook languages a server knows, one per extension. A
// value is built once (scripting/engines.Builtin) and only read after.
type Engines []Language

// Lookup returns the language of the extension ext (".lua").
func (e Engines) Lookup(ext string) (Language, bool) {
	for _, l := range e {
		if l.Ext == ext {
			return l, true
		}
	}
	return Language{}, false
}

// For returns the language of the hook file name, by its extension.
func (e Engines) For(name string) (Language, error) {
	if l, ok := e.Lookup(filepath.Ext(name)); ok {
		return l, nil
	}
	return Language{}, fmt.Errorf("%s: not a hook (want %s)", name, e.Want())
}

// Want names the hook files e knows: "a .lua or .rb file".
func (e Engines) Want() string {
	exts := make([]string, len(e))
	for i, l := range e {
		exts[i] = l.Ext
	}
	switch len(exts) {
	case 0:
		return "no hook files"
	case 1:
		return "a " + exts[0] + " file"
	}
	return "a " + strings.Join(exts[:len(exts)-1], ", ") + " or " + exts[len(exts)-1] + " file"
}
