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

// StartLimited returns an error: the spawner needs Linux.
func (s *Spawner) StartLimited(ctx context.Context, cmd *exec.Cmd, id *Identity, lim Limits) error {
	return errSpawnUnsupported
}

// Finished does nothing: the spawner needs Linux.
func (s *Spawner) Finished(cmd *exec.Cmd, lim Limits) {}

// Containment reports nothing enforced: the spawner needs Linux.
func (s *Spawner) Containment() Containment {
	return Containment{RlimitsWhyNot: errSpawnUnsupported.Error()}
}

// reaper is empty: the spawner needs Linux.
type reaper struct{}

func (r *reaper) closeAll() {}
