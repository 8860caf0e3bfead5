package tenant

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadVHost loads an arbitrary vhost file next to a valid main file.
// The loader never panics and never refuses the main file for it; each
// error names the vhost file (or a file it points to) and a line the file
// has; a vhost it accepts writes back (Encode) to a file that loads to the
// same vhost.
func FuzzLoadVHost(f *testing.F) {
	// The seeds are testdata/fuzz/FuzzLoadVHost (go test runs them).
	// One directory for every input: each writes its vhost file over
	// the last one's.
	dir := f.TempDir()
	for _, d := range []string{"public", "hooks", "vhosts.d"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for name, body := range map[string]string{"hostd.toml": mainOK, "hooks/a.lua": "return nil\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	vf := filepath.Join(dir, "vhosts.d", "v.toml")
	f.Fuzz(func(t *testing.T, vhost string) {
		if len(vhost) > 4096 {
			return
		}
		if err := os.WriteFile(vf, []byte(vhost), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, broken, err := LoadPartial(filepath.Join(dir, "hostd.toml"))
		if err != nil {
			t.Fatalf("the main file was refused: %v", err)
		}
		lines := strings.Count(vhost, "\n") + 1
		for _, b := range broken {
			if b.File != vf || len(b.Errs) == 0 {
				t.Fatalf("broken %s with %d errors", b.File, len(b.Errs))
			}
			for _, e := range b.Errs {
				if !strings.HasPrefix(e.File, dir) || e.File == vf && e.Line > lines || e.Line < 0 || e.Msg == "" {
					t.Fatalf("error %q (line %d of %d)", e.Error(), e.Line, lines)
				}
			}
		}
		if len(cfg.VHosts) == 0 {
			return
		}
		v := cfg.VHosts[0]
		var enc bytes.Buffer
		if err := Encode(&enc, v); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vf, enc.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		again, err := Load(filepath.Join(dir, "hostd.toml"))
		if err != nil {
			t.Fatalf("the encoded vhost does not load: %v\n%s", err, enc.Bytes())
		}
		var enc2 bytes.Buffer
		if err := Encode(&enc2, again.VHosts[0]); err != nil {
			t.Fatal(err)
		}
		if enc.String() != enc2.String() || again.VHosts[0].UID != v.UID || again.VHosts[0].Mode != v.Mode {
			t.Fatalf("round trip:\n%s\nthen\n%s", enc.Bytes(), enc2.Bytes())
		}
	})
}
