package host_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fileOps are the functions that reach the file system by path. In host
// and scripting only the tenant's file gate (sandbox.FS) may do that for a
// tenant; the call sites below are the server's own files.
var fileOps = map[string][]string{
	"os": {"Open", "OpenFile", "Create", "CreateTemp", "ReadFile", "WriteFile", "ReadDir", "Stat", "Lstat",
		"Remove", "RemoveAll", "Rename", "Mkdir", "MkdirAll", "MkdirTemp", "Chmod", "Chown", "Lchown", "Chtimes",
		"Link", "Symlink", "Readlink", "Truncate", "OpenRoot", "OpenInRoot", "DirFS", "Chdir", "CopyFS"},
	"syscall": {"Open", "Openat", "Stat", "Lstat", "Fstatat", "Unlink", "Unlinkat", "Rename", "Renameat",
		"Mkdir", "Mkdirat", "Rmdir", "Readlink", "Symlink", "Link", "Chmod", "Chown", "Lchown", "Access",
		"Creat", "Mknod", "Truncate", "Utimes", "UtimesNano", "Chdir", "Chroot"},
	"golang.org/x/sys/unix": {"Open", "Openat", "Openat2", "Stat", "Lstat", "Fstatat", "Statx", "Unlink",
		"Unlinkat", "Rename", "Renameat", "Renameat2", "Mkdir", "Mkdirat", "Rmdir", "Readlink", "Readlinkat",
		"Symlink", "Symlinkat", "Link", "Linkat", "Chmod", "Fchmodat", "Chown", "Fchownat", "Lchown",
		"Access", "Faccessat", "Faccessat2", "Creat", "Mknod", "Mknodat", "Truncate", "Utimes", "UtimesNano",
		"UtimesNanoAt", "Chdir", "Chroot", "Mkfifo", "Mkfifoat"},
	"path/filepath": {"EvalSymlinks", "Walk", "WalkDir", "Glob"},
	"io/ioutil":     {"ReadFile", "WriteFile", "ReadDir", "TempFile", "TempDir"},
}

// allowedFileOps are the call sites (file relative to the module root,
// then package.Function) that touch the server's own files, never a
// tenant's, each with the reason.
var allowedFileOps = map[string]string{
	"host/reload.go os.ReadFile":           "tls_cert, an operator-configured certificate, to see whether it changed",
	"host/metrics.go os.ReadFile":          "/proc/self/status of the server",
	"host/acme.go os.ReadFile":             "acme_ca_root, an operator-configured PEM file",
	"host/acme.go os.MkdirAll":             "state_dir/acme, the certificate cache",
	"host/admin/socket.go os.MkdirAll":     "state_dir for the admin socket",
	"host/admin/socket.go os.Remove":       "a stale admin socket in state_dir",
	"host/admin/socket.go os.Chmod":        "the admin socket in state_dir (0600)",
	"host/certs.go os.MkdirAll":            "state_dir/certs for generated certificates",
	"host/ocsp.go os.ReadFile":             "the OCSP staple cache in state_dir/ocsp",
	"host/ocsp.go os.MkdirAll":             "state_dir/ocsp",
	"host/phpfpm/pool.go os.MkdirAll":      "state_dir/php-fpm, the server's own directory for the pools' sockets and files",
	"host/phpfpm/pool.go os.Lstat":         "state_dir/php-fpm, checked to be a directory the server owns",
	"host/phpfpm/pool.go os.Chmod":         "state_dir/php-fpm (0700)",
	"host/phpfpm/pool.go os.WriteFile":     "a pool's php-fpm configuration in state_dir/php-fpm",
	"host/phpfpm/pool.go os.Remove":        "a pool's socket and configuration in state_dir/php-fpm",
	"host/phpfpm/process.go os.Remove":     "a stale pool socket in state_dir/php-fpm",
	"host/phpfpm/process.go unix.Fchmodat": "a pool socket in state_dir/php-fpm (0600)",
	"host/phpfpm/process.go os.Open":       "a pool's php-fpm configuration in state_dir/php-fpm, passed to the master",
	"host/capacity.go os.ReadFile":         "/proc/self/status of the server (its thread count)",
	"host/guard.go os.OpenFile":            "state_dir/session.keys and state_dir/admin.token (O_NOFOLLOW, 0600)",
	"host/guard.go os.MkdirAll":            "state_dir for the session keys and the admin token",
	"host/guard.go os.ReadFile":            "[sessions] password_file, an operator-configured secret in the main file",
	"host/spool.go unix.Open":              "O_TMPFILE in the server's temporary directory ($TMPDIR or /tmp): an unnamed file for a request body",
	// The server's files in state_dir, by the packages that keep them.
	"host/tickets/tickets.go os.MkdirAll":                "state_dir for the session ticket keys",
	"host/tickets/tickets.go os.ReadFile":                "state_dir/ticket.keys",
	"host/tickets/tickets_linux.go os.OpenFile":          "state_dir/ticket.keys (0600)",
	"host/internal/statefile/statefile.go os.Remove":     "a temporary file beside a file of state_dir",
	"host/internal/statefile/statefile.go os.Rename":     "a server file (certificate, key, token, staple) into state_dir",
	"host/internal/statefile/statefile.go os.CreateTemp": "a server file in state_dir, before its rename",
	// hostd hook run (a CLI, not the server): the vhost file named on its
	// command line, and a private temporary main file around it.
	"host/hookrun/run.go os.OpenFile":  "the --vhost-config file, O_NOFOLLOW: its owner decides whether root may take its user",
	"host/hookrun/run.go os.MkdirTemp": "a private (0700) directory for the synthetic main file of hostd hook run",
	"host/hookrun/run.go os.WriteFile": "the synthetic main file (0600) in that directory",
	"host/hookrun/run.go os.RemoveAll": "that directory, when the run is over",
}

// TestNoTenantFileOpsOutsideTheGate lists every path-based file system
// call in the non-test code of host and scripting and fails on any that
// is not in allowedFileOps: a tenant's files are reached only through the
// file gate (sandbox.FS), which confines them to the tenant's directories
// and has the kernel check them against the tenant's identity.
func TestNoTenantFileOpsOutsideTheGate(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, top := range []string{"host", "scripting"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				// Test helpers start servers and write fixtures; the
				// vendored gopher-lua's own io/os libraries are never
				// opened for hooks (scripting/lua opens a whitelist and
				// its own gate-backed io and os functions).
				if name == "hosttest" || name == "scriptingtest" || name == "sessiontest" || name == "testdata" || name == "third_party" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			calls, err := pathCalls(p)
			if err != nil {
				return err
			}
			for _, c := range calls {
				found = append(found, filepath.ToSlash(rel)+" "+c)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range found {
		if _, ok := allowedFileOps[f]; !ok {
			t.Errorf("%s: a path-based file operation outside the file gate; go through the tenant's sandbox.FS, or (for the server's own files only) add it to allowedFileOps with the reason", f)
		}
	}
	for k := range allowedFileOps {
		if !slices.Contains(found, k) {
			t.Errorf("allowedFileOps lists %q, which no longer exists: remove it", k)
		}
	}
}

// pathCalls returns "pkg.Func" for each call of a fileOps function in the
// Go file p (pkg named by the last element of its import path).
func pathCalls(p string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	local := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := fileOps[path]; !ok {
			continue
		}
		name := path[strings.LastIndexByte(path, '/')+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[name] = path
	}
	seen := map[string]bool{}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		path, ok := local[id.Name]
		if !ok || !slices.Contains(fileOps[path], sel.Sel.Name) {
			return true
		}
		c := fmt.Sprintf("%s.%s", path[strings.LastIndexByte(path, '/')+1:], sel.Sel.Name)
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
		return true
	})
	return out, nil
}
