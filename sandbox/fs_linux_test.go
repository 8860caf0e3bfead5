//go:build linux

package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hostd/hostd/sandbox"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// gateTree makes root/ and extra/ with files, symbolic links in and out,
// and a FIFO, and returns the base directory.
//
//	root/f.txt, root/sub/g.txt, root/in -> sub/g.txt, root/abs -> /etc/hostname,
//	root/up -> ../outside.txt, root/fifo, root/loop -> loop
//	extra/e.txt, outside.txt
func gateTree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{"root/sub", "extra"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{"root/f.txt": "f", "root/sub/g.txt": "g", "extra/e.txt": "e", "outside.txt": "outside"} {
		if err := os.WriteFile(filepath.Join(base, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"root/in": "sub/g.txt", "root/abs": "/etc/hostname", "root/up": "../outside.txt", "root/loop": "loop"} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(base, "root/fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	return base
}

func readAll(f *os.File) string {
	b, _ := io.ReadAll(f)
	f.Close()
	return string(b)
}

func TestGateConfinement(t *testing.T) {
	base := gateTree(t)
	root, extra := filepath.Join(base, "root"), filepath.Join(base, "extra")
	g, err := sandbox.NewDirectFS(root, extra)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	tests := []struct {
		name string
		want string // content, or "" when an error is wanted
		err  error
	}{
		{"f.txt", "f", nil},
		{"sub/g.txt", "g", nil},
		{"in", "g", nil},
		{"./sub/../f.txt", "f", nil},
		{root + "/f.txt", "f", nil},
		{root + "//sub/./g.txt", "g", nil},
		{extra + "/e.txt", "e", nil},
		{"abs", "", sandbox.ErrEscapes},
		{"up", "", sandbox.ErrEscapes},
		{"sub/../../outside.txt", "", sandbox.ErrEscapes},
		{"../outside.txt", "", sandbox.ErrOutsideRoots},
		{root + "/../outside.txt", "", sandbox.ErrOutsideRoots},
		{base + "/outside.txt", "", sandbox.ErrOutsideRoots},
		{"/etc/passwd", "", sandbox.ErrOutsideRoots},
		{"/proc/self/maps", "", sandbox.ErrOutsideRoots},
		{"/proc/self/task/1/comm", "", sandbox.ErrOutsideRoots},
		{"fifo", "", sandbox.ErrNotRegular},
		{"loop", "", syscall.ELOOP},
		{"missing", "", fs.ErrNotExist},
		{"", "", fs.ErrInvalid},
		{"f.txt\x00x", "", fs.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := g.Open(tt.name)
			if tt.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				if got := readAll(f); got != tt.want {
					t.Fatalf("read %q, want %q", got, tt.want)
				}
				return
			}
			if err == nil {
				f.Close()
				t.Fatalf("opened, want %v", tt.err)
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("%v, want %v", err, tt.err)
			}
			gateErr := tt.err == sandbox.ErrEscapes || tt.err == sandbox.ErrOutsideRoots || tt.err == sandbox.ErrNotRegular
			if gateErr && !errors.Is(err, fs.ErrPermission) {
				t.Errorf("%v does not match fs.ErrPermission", err)
			}
		})
	}

	// Stat follows a link inside the root; Lstat does not.
	if fi, err := g.Stat("in"); err != nil || !fi.Mode().IsRegular() || fi.Size() != 1 || fi.Name() != "in" {
		t.Errorf("Stat(in) = %v, %v", fi, err)
	}
	if fi, err := g.Lstat("in"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat(in) = %v, %v", fi, err)
	}
	if fi, err := g.Stat("fifo"); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("Stat(fifo) = %v, %v", fi, err)
	}
	if _, err := g.Stat("abs"); !errors.Is(err, sandbox.ErrEscapes) {
		t.Errorf("Stat(abs) = %v, want ErrEscapes", err)
	}
	if fi, err := g.Lstat("abs"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat(abs) = %v, %v", fi, err)
	}
	ents, err := g.ReadDir("sub")
	if err != nil || len(ents) != 1 || ents[0].Name() != "g.txt" {
		t.Fatalf("ReadDir(sub) = %v, %v", ents, err)
	}
	if fi, err := ents[0].Info(); err != nil || fi.Size() != 1 {
		t.Errorf("entry Info = %v, %v", fi, err)
	}

	// Changes inside the roots work; anything reaching out does not.
	if err := g.Mkdir("new", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := g.Rename("f.txt", "new/f2.txt"); err != nil {
		t.Fatal(err)
	}
	if err := g.Rename(root+"/new/f2.txt", extra+"/f3.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(extra, "f3.txt")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{extra + "/f3.txt", "new", "in"} {
		if err := g.Remove(name); err != nil {
			t.Errorf("Remove(%s): %v", name, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "sub/g.txt")); err != nil {
		t.Errorf("removing the link removed its target: %v", err)
	}
	for _, tt := range []struct {
		what string
		err  error
		want error
	}{
		{"remove the root", g.Remove("."), fs.ErrInvalid},
		{"remove the root by path", g.Remove(root), fs.ErrInvalid},
		{"remove outside", g.Remove("../outside.txt"), sandbox.ErrOutsideRoots},
		{"remove through an escaping link", g.Remove("up/x"), sandbox.ErrEscapes},
		{"rename out", g.Rename("sub/g.txt", base+"/stolen"), sandbox.ErrOutsideRoots},
		{"rename in", g.Rename(base+"/outside.txt", "mine"), sandbox.ErrOutsideRoots},
		{"mkdir outside", g.Mkdir("/tmp/gate-test", 0o755), sandbox.ErrOutsideRoots},
		{"remove missing", g.Remove("nothing"), fs.ErrNotExist},
	} {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.what, tt.err, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "outside.txt")); err != nil {
		t.Errorf("outside.txt: %v", err)
	}
}

// TestGateMagicLinks: even with /proc as a root, /proc/self/fd/N and
// /proc/thread-self/fd/N are never followed.
func TestGateMagicLinks(t *testing.T) {
	base := gateTree(t)
	dfd, err := unix.Open(filepath.Join(base, "root"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	g, err := sandbox.NewDirectFS("/proc")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, p := range []string{
		fmt.Sprintf("self/fd/%d/f.txt", dfd),
		fmt.Sprintf("thread-self/fd/%d/f.txt", dfd),
		fmt.Sprintf("/proc/self/fd/%d/f.txt", dfd),
		"self/root/etc/hostname",
		"self/cwd",
	} {
		f, err := g.Open(p)
		if err == nil {
			f.Close()
			t.Errorf("%s opened through a magic link", p)
			continue
		}
		if !errors.Is(err, syscall.ELOOP) && !errors.Is(err, sandbox.ErrEscapes) {
			t.Errorf("%s: %v, want ELOOP or ErrEscapes", p, err)
		}
	}
}

// TestGateDevice: a device node inside a root is refused.
func TestGateDevice(t *testing.T) {
	sandboxtest.RequireRoot(t)
	base := gateTree(t)
	if err := unix.Mknod(filepath.Join(base, "root/null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		sandboxtest.Skipf(t, "mknod: %v", err)
	}
	g, err := sandbox.NewDirectFS(filepath.Join(base, "root"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if f, err := g.OpenFile("null", os.O_WRONLY, 0); !errors.Is(err, sandbox.ErrNotRegular) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("device: %v, want ErrNotRegular", err)
	}
}

func newRings(t testing.TB, n int) *sandbox.Rings {
	t.Helper()
	r, err := sandbox.NewRings(n)
	if err != nil {
		sandboxtest.Skipf(t, "io_uring unavailable: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

// tenantGate returns tenant id's gate over the fixture in mode.
func tenantGate(t *testing.T, mode sandbox.Mode, id identity, rings *sandbox.Rings, base string) (*sandbox.Tenant, *sandbox.FS) {
	t.Helper()
	tn := newTenant(t, mode, id, func(o *sandbox.Options) { o.Rings = rings })
	g, err := tn.NewFS(base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return tn, g
}

// TestGateChecksTenant: in uring mode and in every switching mode, the
// gate's operations are checked by the kernel against the tenant: its own
// files yes, the other tenant's and root's 0600 files no (no
// CAP_DAC_OVERRIDE), no creation in root's directory, and what it creates
// is its own.
func TestGateChecksTenant(t *testing.T) {
	sandboxtest.RequireRoot(t)
	rings := newRings(t, 2)
	fx := newFixture(t)
	if err := os.WriteFile(filepath.Join(fx.rootDir, "r"), []byte("root"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range append([]sandbox.Mode{sandbox.ModeUring}, switchingModes...) {
		t.Run(string(mode), func(t *testing.T) {
			tn, g := tenantGate(t, mode, tenantA, rings, fx.base)
			var errs []string
			check := func(what string, err, want error) {
				if (want == nil) != (err == nil) || want != nil && !errors.Is(err, want) {
					errs = append(errs, fmt.Sprintf("%s: %v, want %v", what, err, want))
				}
			}
			err := tn.Run(context.Background(), func() {
				f, err := g.Open("a/secret")
				check("own 0600 file", err, nil)
				if err == nil {
					if got := readAll(f); got != "secret of 31001" {
						errs = append(errs, "own file read "+got)
					}
				}
				_, err = g.Open("b/secret")
				check("other tenant's 0700 directory", err, fs.ErrPermission)
				_, err = g.Open("shared/b.txt")
				check("other tenant's 0600 file", err, fs.ErrPermission)
				_, err = g.Open("root/r")
				check("root's 0600 file", err, fs.ErrPermission)
				_, err = g.Open("a/link")
				check("own link to the other's file", err, fs.ErrPermission)
				_, err = g.OpenFile("root/new", os.O_WRONLY|os.O_CREATE, 0o644)
				check("create in root's directory", err, fs.ErrPermission)
				check("mkdir in root's directory", g.Mkdir("root/d", 0o755), fs.ErrPermission)
				check("remove root's file", g.Remove("root/r"), fs.ErrPermission)
				check("remove the other's file", g.Remove("shared/b.txt"), fs.ErrPermission)
				check("rename the other's file", g.Rename("shared/b.txt", "a/stolen"), fs.ErrPermission)

				nf, err := g.OpenFile("a/new", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
				check("create own file", err, nil)
				if err == nil {
					fi, _ := nf.Stat()
					if st := fi.Sys().(*syscall.Stat_t); st.Uid != tenantA.uid || st.Gid != tenantA.gid {
						errs = append(errs, fmt.Sprintf("created file owned by %d:%d", st.Uid, st.Gid))
					}
					nf.Close()
				}
				check("mkdir own", g.Mkdir("a/d", 0o700), nil)
				check("rename own", g.Rename("a/new", "a/d/new"), nil)
				check("remove own file", g.Remove("a/d/new"), nil)
				check("remove own dir", g.Remove("a/d"), nil)
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range errs {
				t.Error(e)
			}
		})
	}
	waitServerOnly(t)
}

// TestURingPersonalityLifecycle: a ModeUring tenant registers one
// personality on every ring from a thread that is destroyed afterwards,
// operations run concurrently for two tenants without crossing over, and
// Close unregisters it (the kernel's count agrees) so that the gate fails
// afterwards.
func TestURingPersonalityLifecycle(t *testing.T) {
	sandboxtest.RequireRoot(t)
	rings := newRings(t, 2)
	fx := newFixture(t)
	ta, ga := tenantGate(t, sandbox.ModeUring, tenantA, rings, fx.base)
	tb, gb := tenantGate(t, sandbox.ModeUring, tenantB, rings, fx.base)
	if n := rings.Personalities(); n != 2 {
		t.Fatalf("Personalities = %d, want 2", n)
	}
	if n, err := rings.RegisteredOnRings(64); err != nil || n != 2 {
		t.Fatalf("kernel count = %d, %v; want 2", n, err)
	}
	waitServerOnly(t) // the registering threads are gone

	var wg sync.WaitGroup
	var bad sync.Map
	for i := range 64 {
		wg.Go(func() {
			g, own, other := ga, "a/secret", "b/secret"
			if i%2 == 1 {
				g, own, other = gb, "b/secret", "a/secret"
			}
			for range 50 {
				f, err := g.Open(own)
				if err != nil {
					bad.Store("own: "+err.Error(), true)
					return
				}
				f.Close()
				if f, err := g.Open(other); err == nil {
					f.Close()
					bad.Store("crossed into "+other, true)
					return
				}
			}
		})
	}
	wg.Wait()
	bad.Range(func(k, _ any) bool { t.Error(k); return true })

	ta.Close()
	if n := rings.Personalities(); n != 1 {
		t.Errorf("after Close: Personalities = %d, want 1", n)
	}
	if n, err := rings.RegisteredOnRings(64); err != nil || n != 1 {
		t.Errorf("after Close: kernel count = %d, %v; want 1", n, err)
	}
	if _, err := ga.Open("a/secret"); !errors.Is(err, sandbox.ErrFSClosed) {
		t.Errorf("gate of a closed tenant: %v, want ErrFSClosed", err)
	}
	tb.Close()
	if n, err := rings.RegisteredOnRings(64); err != nil || n != 0 {
		t.Errorf("after both closed: kernel count = %d, %v; want 0", n, err)
	}
}

func TestURingRefusesMissingRings(t *testing.T) {
	sandboxtest.RequireRoot(t)
	_, err := sandbox.NewTenant(sandbox.Options{Mode: sandbox.ModeUring, Identity: tenantA.sandbox()})
	if !errors.Is(err, sandbox.ErrNoRings) {
		t.Fatalf("NewTenant without rings: %v", err)
	}
}

// TestDirsShareRoots: gates over the same directory share one descriptor
// through a Dirs; a directory replaced since is opened anew; the last
// gate closes it.
func TestDirsShareRoots(t *testing.T) {
	base := gateTree(t)
	root := filepath.Join(base, "root")
	var dirs sandbox.Dirs
	mk := func() *sandbox.FS {
		tn, err := sandbox.NewTenant(sandbox.Options{Dirs: &dirs})
		if err != nil {
			t.Fatal(err)
		}
		g, err := tn.NewFS(root, filepath.Join(base, "extra"))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	a, b := mk(), mk()
	if n := dirs.Len(); n != 2 {
		t.Fatalf("two gates over the same two directories: %d open, want 2", n)
	}
	// Replace the document root: a new gate sees the new directory, the
	// old ones keep theirs.
	if err := os.Rename(root, root+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "f.txt"), []byte("new"), 0o644)
	c := mk()
	for g, want := range map[*sandbox.FS]string{a: "f", b: "f", c: "new"} {
		f, err := g.Open("f.txt")
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(f); got != want {
			t.Errorf("f.txt: %q, want %q", got, want)
		}
	}
	for _, g := range []*sandbox.FS{a, b, c} {
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := dirs.Len(); n != 0 {
		t.Errorf("after closing every gate: %d open", n)
	}
}

// TestGateCloseWhileInUse: closing a gate while operations run on other
// goroutines is safe (go test -race) and fails later operations cleanly.
func TestGateCloseWhileInUse(t *testing.T) {
	base := gateTree(t)
	g, err := sandbox.NewDirectFS(filepath.Join(base, "root"))
	if err != nil {
		t.Fatal(err)
	}
	view := g.Root(0)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				if f, err := view.Open("f.txt"); err == nil {
					f.Close()
				} else if !errors.Is(err, sandbox.ErrFSClosed) {
					t.Error(err)
					return
				}
				view.Stat("sub")
			}
		})
	}
	g.Close()
	wg.Wait()
	if _, err := view.Open("f.txt"); !errors.Is(err, sandbox.ErrFSClosed) {
		t.Errorf("after Close: %v, want ErrFSClosed", err)
	}
}

// TestRootThroughTenantLink: a tenant owns the directory holding its
// document root and swaps the root for a link to "/" (or to another
// tenant's files) before a start or reload. A gate of the server (mode
// none/suexec) must not follow it; links root owns still work.
func TestRootThroughTenantLink(t *testing.T) {
	sandboxtest.RequireRoot(t)
	base := t.TempDir()
	home := filepath.Join(base, "home")
	site := filepath.Join(base, "site")
	for _, d := range []string{home, site, filepath.Join(site, "www")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(site, "www", "index.html"), []byte("site"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, 31001, 31001); err != nil {
		t.Fatal(err)
	}
	link := func(name, target string, uid int) string {
		p := filepath.Join(home, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		root string
		want error // nil: the gate opens and serves index.html
	}{
		{link("www", "/", 31001), sandbox.ErrUntrustedLink},
		{link("etc", "/etc", 31001) + "/ssl", sandbox.ErrUntrustedLink},
		{link("up", "../site/www", 31001), sandbox.ErrUntrustedLink},
		{link("ok", site+"/www", 0), nil},
		{link("okrel", "../site/www", 0), nil},
		{link("okdir", "../site", 0) + "/www", nil},
		{link("chain", "okrel", 0), nil},
		{link("chainbad", "www", 0), sandbox.ErrUntrustedLink},
		{link("loop", "loop", 0), unix.ELOOP},
		{filepath.Join(site, "www", "index.html"), unix.ENOTDIR},
	}
	for _, tc := range tests {
		g, err := sandbox.NewDirectFS(tc.root)
		if tc.want != nil {
			if !errors.Is(err, tc.want) {
				t.Errorf("root %s: %v, want %v", tc.root, err, tc.want)
			}
			if err == nil {
				g.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("root %s: %v", tc.root, err)
			continue
		}
		f, err := g.Open("index.html")
		if err != nil {
			t.Errorf("root %s: open index.html: %v", tc.root, err)
		} else if got := readAll(f); got != "site" {
			t.Errorf("root %s: index.html = %q", tc.root, got)
		}
		g.Close()
	}
}

// TestGateDoesNotCrossMounts: a mount below a root (a tenant's FUSE mount
// could hang every lookup through it) is not entered; the root's own files
// still open.
func TestGateDoesNotCrossMounts(t *testing.T) {
	sandboxtest.RequireRoot(t)
	base := gateTree(t)
	root := filepath.Join(base, "root")
	mnt := filepath.Join(root, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(filepath.Join(base, "extra"), mnt, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	g, err := sandbox.NewDirectFS(root)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if f, err := g.Open("mnt/e.txt"); !errors.Is(err, sandbox.ErrEscapes) {
		if err == nil {
			f.Close()
		}
		t.Errorf("open through a mount point: %v, want ErrEscapes", err)
	}
	f, err := g.Open("f.txt")
	if err != nil {
		t.Fatalf("open f.txt: %v", err)
	}
	if got := readAll(f); got != "f" {
		t.Errorf("f.txt = %q", got)
	}
}
