package scripting

import (
	"os"
	"syscall"
	"time"
)

// statFile returns path's modification time and size with a stat(2) that
// allocates no os.FileInfo (it runs on every hook run).
func statFile(path string) (time.Time, int64, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Stat(path, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return time.Time{}, 0, &os.PathError{Op: "stat", Path: path, Err: err}
		}
		break
	}
	return time.Unix(st.Mtim.Sec, st.Mtim.Nsec), st.Size, nil
}
