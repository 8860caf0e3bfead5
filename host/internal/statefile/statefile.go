// Package statefile writes the server's own files in its state
// directory (generated certificates and keys, ticket and session keys, the
// admin token, OCSP staples) so that a crash never leaves one half
// written. Tenants' files are never written through it.
package statefile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteAtomic writes data to a temporary file beside name and renames
// it into place, so a crash never leaves a half-written key.
func WriteAtomic(name string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), ".tmp-"+filepath.Base(name))
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
