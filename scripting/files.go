package scripting

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
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
