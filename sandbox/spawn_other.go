//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
)

// errSpawnUnsupported is returned on systems without per-thread credentials.
var errSpawnUnsupported = errors.New("sandbox: the spawner requires linux")

// NewSpawner returns an error: the spawner needs Linux.
func NewSpawner(logger *slog.Logger) (*Spawner, error) { return nil, errSpawnUnsupported }

// Start returns an error: the spawner needs Linux.
func (s *Spawner) Start(ctx context.Context, cmd *exec.Cmd, id *Identity) error {
	return errSpawnUnsupported
}

// KillProcessGroup returns an error: the spawner needs Linux.
func KillProcessGroup(pgid int) error { return errSpawnUnsupported }
