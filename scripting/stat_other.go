//go:build !linux

package scripting

import (
	"os"
	"time"
)

func statFile(path string) (time.Time, int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}, 0, err
	}
	return fi.ModTime(), fi.Size(), nil
}
