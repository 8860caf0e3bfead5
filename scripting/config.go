package scripting

import (
	"log/slog"
	"time"
)

// Defaults for a zero Config, the same for every engine.
const (
	DefaultTimeout   = time.Second
	DefaultMaxInput  = 1 << 20
	DefaultMaxMemory = 64 << 20
	DefaultMaxVMs    = 8
	DefaultMaxScript = 1 << 20
)

// WithDefaults returns c with every zero field set to its default: the
// limits above, a private shared dictionary, a discarding logger and no
// file access.
func (c Config) WithDefaults() Config {
	if c.Limits.Timeout <= 0 {
		c.Limits.Timeout = DefaultTimeout
	}
	if c.Limits.MaxInput <= 0 {
		c.Limits.MaxInput = DefaultMaxInput
	}
	if c.Limits.MaxMemory <= 0 {
		c.Limits.MaxMemory = DefaultMaxMemory
	}
	if c.Limits.MaxScript <= 0 {
		c.Limits.MaxScript = DefaultMaxScript
	}
	if c.MaxVMs <= 0 {
		c.MaxVMs = DefaultMaxVMs
	}
	if c.Shared == nil {
		c.Shared = NewSharedDict(0)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.FS == nil {
		c.FS = noFS{}
	}
	return c
}
