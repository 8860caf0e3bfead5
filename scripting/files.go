package scripting

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// MaxDirEntries bounds the names ReadDirNames returns.
const MaxDirEntries = 10000

// ReadDirNames lists the directory path through fsys (the tenant's file
// gate): its entry names without "." and "..", sorted. A directory with
// more than MaxDirEntries entries is an error.
func ReadDirNames(fsys FS, path string) ([]string, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := CheckHookDir(f); err != nil {
		return nil, err
	}
	names, err := f.Readdirnames(MaxDirEntries + 1)
	if err != nil && len(names) == 0 {
		if errors.Is(err, io.EOF) {
			return []string{}, nil
		}
		return nil, err
	}
	if len(names) > MaxDirEntries {
		return nil, fmt.Errorf("%s: more than %d entries", path, MaxDirEntries)
	}
	slices.Sort(names)
	return names, nil
}

// MaxHookString is the longest string a host function of a run with limits
// l reads from a file in one piece: a quarter of the memory limit, at
// least MaxInput (as Lua's string limit).
func (l Limits) MaxHookString() int {
	return max(int(l.MaxMemory/4), l.MaxInput)
}

// OpenFlags returns the os.OpenFile flags of a C/Lua/Ruby file mode ("r",
// "w", "a", "r+", "w+", "a+", each with an optional "b"), and false for
// any other mode.
func OpenFlags(mode string) (int, bool) {
	switch strings.Replace(mode, "b", "", 1) {
	case "r":
		return os.O_RDONLY, true
	case "w":
		return os.O_WRONLY | os.O_CREATE | os.O_TRUNC, true
	case "a":
		return os.O_WRONLY | os.O_CREATE | os.O_APPEND, true
	case "r+":
		return os.O_RDWR, true
	case "w+":
		return os.O_RDWR | os.O_CREATE | os.O_TRUNC, true
	case "a+":
		return os.O_RDWR | os.O_CREATE | os.O_APPEND, true
	}
	return 0, false
}
