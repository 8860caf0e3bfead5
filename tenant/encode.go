package tenant

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
)

// Encode writes v, a MainFile or a VHost (or a pointer to one), as TOML
// that Load reads back: every key whose value is not the zero value (a
// zero key means its default), and none of the fields Load sets (File,
// UID, Mode, ...). Encoding a loaded configuration and loading it again
// gives the same configuration, except that write_timeout = "0s" (none)
// is not written: set it in the file by hand.
func Encode(w io.Writer, v any) error {
	switch v.(type) {
	case MainFile, *MainFile, VHost, *VHost:
	default:
		return fmt.Errorf("tenant: encode: want a MainFile or a VHost, not %T", v)
	}
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("tenant: encode: %w", err)
	}
	if _, err := w.Write(dropEmptyTables(b.Bytes())); err != nil {
		return fmt.Errorf("tenant: encode: %w", err)
	}
	return nil
}

// dropEmptyTables removes the headers of tables without keys (the
// encoder's omitempty keeps a table whose struct has a slice or map, such
// as [php] and [sessions], even when every key is zero), and the blank
// line before each.
func dropEmptyTables(src []byte) []byte {
	lines := bytes.SplitAfter(src, []byte("\n"))
	header := func(l []byte) bool { return bytes.HasPrefix(l, []byte("[")) }
	blank := func(l []byte) bool { return len(bytes.TrimSpace(l)) == 0 }
	var out []byte
	for i, l := range lines {
		if header(l) && !bytes.HasPrefix(l, []byte("[[")) {
			j := i + 1
			for j < len(lines) && blank(lines[j]) {
				j++
			}
			if j == len(lines) || header(lines[j]) {
				out = bytes.TrimSuffix(out, []byte("\n")) // the blank line before it
				continue
			}
		}
		out = append(out, l...)
	}
	return out
}

// MainFile returns the main file's tables of a loaded configuration, as
// Encode writes them: the [server] keys as loaded, but default_sandbox
// only when the file set it (Load resolves an absent one per vhost).
func (c *Config) MainFile() MainFile {
	m := MainFile{Server: c.Server, Sessions: c.Sessions}
	if c.implicitSandbox {
		m.Server.DefaultSandbox = ""
	}
	return m
}

// WriteFile encodes v (see Encode) into the file at path, mode 0644,
// making its directory.
func WriteFile(path string, v any) error {
	var b bytes.Buffer
	if err := Encode(&b, v); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("tenant: write %s: %w", path, err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("tenant: write %s: %w", path, err)
	}
	return nil
}
