package host

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// BuildInfo says which hostd is running: `hostd version`, Status and the
// hostd_build_info metric show it. The zero value reads what the Go
// toolchain stamped into the binary (ReadBuildInfo).
type BuildInfo struct {
	// Version is the module version ("v1.2.3", a pseudo-version, or
	// "(devel)").
	Version string
	// Revision is the VCS commit the binary was built from, with
	// "+dirty" when the work tree had changes; "" when unknown.
	Revision string
	// Time is the build time (RFC 3339, UTC); "" when unknown.
	Time string
	// GoVersion is the Go toolchain.
	GoVersion string
}

// ReadBuildInfo fills the zero fields of b from the binary's build
// information: the main module's version and the VCS settings that
// `go build -buildvcs` records (revision, commit time, modified).
func (b BuildInfo) ReadBuildInfo() BuildInfo {
	if b.GoVersion == "" {
		b.GoVersion = runtime.Version()
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "" {
		b.Version = bi.Main.Version
	}
	var rev, vcsTime string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			vcsTime = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if b.Revision == "" && rev != "" {
		b.Revision = rev
		if dirty {
			b.Revision += "+dirty"
		}
	}
	if b.Time == "" && vcsTime != "" {
		b.Time = vcsTime + " (commit)"
	}
	return b
}

// String is one line: "v0.3.0 (revision 1a2b3c4d5e6f, built 2026-..., go1.26.8)".
func (b BuildInfo) String() string {
	v := b.Version
	if v == "" {
		v = "(devel)"
	}
	rev := b.Revision
	if rev == "" {
		rev = "unknown"
	}
	t := b.Time
	if t == "" {
		t = "unknown"
	}
	return fmt.Sprintf("%s (revision %s, built %s, %s %s/%s)", v, rev, t, b.GoVersion, runtime.GOOS, runtime.GOARCH)
}
