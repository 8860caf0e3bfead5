package host_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
)

// openFileSite serves alice and bob, both with the open-file cache on
// (valid, at most max entries), in mode; it returns the server and the
// setup directory. alice's root holds page.html (0600), sub/deep.txt,
// swap/same.txt and x.txt; bob's same.txt, swap/same.txt and a 0600
// secret.txt.
func openFileSite(t *testing.T, mode, valid string, maxEntries int) (*hosttest.Server, string) {
	t.Helper()
	dir := tenantDir(t)
	vhost := func(name string, uid int) string {
		return fmt.Sprintf("server_name = %q\nroot = \"../%s\"\nuser = \"%d\"\nsandbox = %q\n[limits]\nmax_concurrent_per_client = -1\nopen_file_cache_valid = %q\nopen_file_cache_max = %d\n",
			name+".example", name, uid, mode, valid, maxEntries)
	}
	hosttest.Write(t, dir, hosttest.Files{
		"hostd.toml":          hosttest.MainConfig + "admin_listen = \"127.0.0.1:0\"\nmax_conns_per_ip = -1\n",
		"vhosts.d/alice.toml": vhost("alice", aliceUID),
		"vhosts.d/bob.toml":   vhost("bob", bobUID),
		"alice/page.html":     "<html>alice's page</html>\n",
		"alice/index.html":    "alice home\n",
		"alice/sub/deep.txt":  "alice deep\n",
		"alice/swap/same.txt": "alice same\n",
		"alice/x.txt":         "alice x\n",
		"alice/same.txt":      "alice same\n",
		"alice/many/":         "",
		"bob/same.txt":        "bob same\n",
		"bob/swap/same.txt":   "bob swap same\n",
		"bob/secret.txt":      "bob secret\n",
	})
	chownTree(t, filepath.Join(dir, "alice"), aliceUID)
	chownTree(t, filepath.Join(dir, "bob"), bobUID)
	chown(t, dir, aliceUID, 0o600, "alice/page.html")
	chown(t, dir, bobUID, 0o600, "bob/secret.txt")
	if err := os.Link(filepath.Join(dir, "bob/secret.txt"), filepath.Join(dir, "alice/hardlink.txt")); err != nil {
		t.Fatal(err)
	}
	return hosttest.StartDir(t, dir), dir
}

func mustGet(t *testing.T, c *http.Client, url string, status int, body string) hosttest.Response {
	t.Helper()
	r := hosttest.Get(t, c, url)
	if r.StatusCode != status || (body != "" && r.Body != body) {
		t.Fatalf("GET %s: %d %q, want %d %q", url, r.StatusCode, r.Body, status, body)
	}
	return r
}

// TestOpenFileCache: with open_file_cache_valid on, a cached file is served
// with the bytes and headers of an uncached one; a change of the file
// itself (content, mode, replacement by a symbolic link) is seen at the
// next request; a change around it (its directory made unreadable or
// swapped for a link to another tenant's) is seen once valid passed, and
// in between only the file the gate opened is ever served; another
// tenant's cached descriptor cannot be reached through /proc/self/fd; two
// vhosts' equal paths stay apart.
func TestOpenFileCache(t *testing.T) {
	requireRoot(t)
	for _, mode := range []string{"uring", "thread"} {
		t.Run(mode, func(t *testing.T) {
			s, dir := openFileSite(t, mode, "1s", 100)
			alice, bob := s.Client("alice.example", false), s.Client("bob.example", false)
			const a, b = "https://alice.example", "https://bob.example"

			// Hits serve what the miss served.
			first := mustGet(t, alice, a+"/page.html", 200, "<html>alice's page</html>\n")
			for range 3 {
				r := mustGet(t, alice, a+"/page.html", 200, first.Body)
				for _, h := range []string{"Content-Type", "Content-Length", "Etag", "Last-Modified", "Accept-Ranges"} {
					if r.Header.Get(h) != first.Header.Get(h) || r.Header.Get(h) == "" {
						t.Fatalf("cached %s: %q, first response %q", h, r.Header.Get(h), first.Header.Get(h))
					}
				}
			}
			req, _ := http.NewRequest(http.MethodGet, a+"/page.html", nil)
			req.Header.Set("If-None-Match", first.Header.Get("Etag"))
			if r := hosttest.Do(t, alice, req); r.StatusCode != http.StatusNotModified {
				t.Fatalf("If-None-Match on a cached file: %d", r.StatusCode)
			}
			req, _ = http.NewRequest(http.MethodGet, a+"/page.html", nil)
			req.Header.Set("Range", "bytes=6-10")
			if r := hosttest.Do(t, alice, req); r.StatusCode != http.StatusPartialContent || r.Body != "alice" {
				t.Fatalf("Range on a cached file: %d %q", r.StatusCode, r.Body)
			}
			mfs := scrape(t, adminTarget{s.AdminAddr(), s.AdminToken()})
			if v, _ := metricValue(mfs, "hostd_open_file_cache_hits_total", map[string]string{"vhost": "alice.example"}); v < 5 {
				t.Fatalf("hostd_open_file_cache_hits_total = %v, want >= 5", v)
			}

			// A directory's index file is kept too; made unreadable, the
			// directory has no index (listing off: 403).
			for range 2 {
				mustGet(t, alice, a+"/", 200, "alice home\n")
			}
			if err := os.Chmod(filepath.Join(dir, "alice/index.html"), 0); err != nil {
				t.Fatal(err)
			}
			mustGet(t, alice, a+"/", 403, "")

			// The content changes in place (same inode, longer): the next
			// response has the new bytes and length.
			page := filepath.Join(dir, "alice/page.html")
			f, err := os.OpenFile(page, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("<html>alice's page, longer now</html>\n")
			f.Close()
			r := mustGet(t, alice, a+"/page.html", 200, "<html>alice's page, longer now</html>\n")
			if r.Header.Get("Content-Length") != "38" {
				t.Fatalf("Content-Length after the change: %q", r.Header.Get("Content-Length"))
			}

			// chmod 000 of the cached file: refused at once (ctime moved).
			if err := os.Chmod(page, 0); err != nil {
				t.Fatal(err)
			}
			mustGet(t, alice, a+"/page.html", 403, "")

			// The cached file replaced by a symbolic link to bob's secret:
			// never bob's bytes.
			mustGet(t, alice, a+"/x.txt", 200, "alice x\n")
			tmp := filepath.Join(dir, "alice/x.tmp")
			if err := os.Symlink(filepath.Join(dir, "bob/secret.txt"), tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, "alice/x.txt")); err != nil {
				t.Fatal(err)
			}
			mustGet(t, alice, a+"/x.txt", 403, "")

			// A directory around a cached file swapped for a link to bob's
			// directory of the same shape: until valid passes, alice's
			// old file (the kept descriptor); then the gate refuses the
			// link. Never bob's file.
			mustGet(t, alice, a+"/swap/same.txt", 200, "alice same\n")
			if err := os.Rename(filepath.Join(dir, "alice/swap"), filepath.Join(dir, "alice/swap.old")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(dir, "bob/swap"), filepath.Join(dir, "alice/swap")); err != nil {
				t.Fatal(err)
			}
			until(t, "the swapped directory refused", func() bool {
				r := hosttest.Get(t, alice, a+"/swap/same.txt")
				if strings.Contains(r.Body, "bob") {
					t.Fatalf("alice's vhost served bob's file: %d %q", r.StatusCode, r.Body)
				}
				return r.StatusCode == 403
			})

			// The cached file's directory made unreadable: served until
			// valid passes, then refused as without the cache.
			mustGet(t, alice, a+"/sub/deep.txt", 200, "alice deep\n")
			if err := os.Chmod(filepath.Join(dir, "alice/sub"), 0); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(filepath.Join(dir, "alice/sub"), 0o755) })
			until(t, "the unreadable directory refused", func() bool {
				r := hosttest.Get(t, alice, a+"/sub/deep.txt")
				if r.StatusCode == 200 && r.Body != "alice deep\n" {
					t.Fatalf("sub/deep.txt: %q", r.Body)
				}
				return r.StatusCode == 403
			})

			// A hard link to bob's 0600 secret in alice's root: refused by
			// the kernel every time (failures are not cached), even once
			// bob's vhost keeps the file open.
			for range 2 {
				mustGet(t, alice, a+"/hardlink.txt", 403, "")
				mustGet(t, bob, b+"/secret.txt", 200, "bob secret\n")
			}

			// Two vhosts, one path: each its own file.
			for range 5 {
				mustGet(t, alice, a+"/same.txt", 200, "alice same\n")
				mustGet(t, bob, b+"/same.txt", 200, "bob same\n")
			}
			// bob's cached descriptor, through alice's link to
			// /proc/self/fd/N: refused (the gate follows no magic link).
			mustGet(t, bob, b+"/secret.txt", 200, "bob secret\n")
			fd := fdOf(t, filepath.Join(dir, "bob/secret.txt"))
			if fd < 0 {
				t.Fatal("bob's secret.txt is not kept open by the cache")
			}
			if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", fd), filepath.Join(dir, "alice/procfd")); err != nil {
				t.Fatal(err)
			}
			if r := hosttest.Get(t, alice, a+"/procfd"); r.StatusCode != 403 || strings.Contains(r.Body, "bob") {
				t.Fatalf("alice's link to bob's cached descriptor: %d %q", r.StatusCode, r.Body)
			}
		})
	}
}

// until polls cond for up to 15 s (valid is 1 s; the machine is loaded).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOpenFileCacheReload: a reload closes the kept descriptors of every
// vhost, unchanged ones included, so the next request asks the gate.
func TestOpenFileCacheReload(t *testing.T) {
	requireRoot(t)
	s, dir := openFileSite(t, "thread", "1h", 100)
	alice := s.Client("alice.example", false)
	mustGet(t, alice, "https://alice.example/sub/deep.txt", 200, "alice deep\n")
	deep := filepath.Join(dir, "alice/sub/deep.txt")
	if fdOf(t, deep) < 0 {
		t.Fatal("sub/deep.txt is not kept open")
	}
	if err := os.Chmod(filepath.Join(dir, "alice/sub"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "alice/sub"), 0o755) })
	mustGet(t, alice, "https://alice.example/sub/deep.txt", 200, "alice deep\n") // within valid (1h)
	res, err := s.Reload(context.Background())
	if err != nil || res.Unchanged != 2 {
		t.Fatalf("reload: %+v %v", res, err)
	}
	if fd := fdOf(t, deep); fd >= 0 {
		t.Fatalf("descriptor %d of sub/deep.txt still open after the reload", fd)
	}
	mustGet(t, alice, "https://alice.example/sub/deep.txt", 403, "")
}

// TestOpenFileCacheBounds: 10,000 distinct files through a vhost whose
// cache keeps at most 100: never more than 100 descriptors of them open,
// and none once the vhost is removed.
func TestOpenFileCacheBounds(t *testing.T) {
	requireRoot(t)
	s, dir := openFileSite(t, "uring", "1h", 100)
	many := filepath.Join(dir, "alice/many")
	const n = 10000
	for i := range n {
		p := filepath.Join(many, fmt.Sprintf("f%d.txt", i))
		if err := os.WriteFile(p, []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, aliceUID, aliceUID); err != nil {
			t.Fatal(err)
		}
	}
	kept := func() int {
		ents, _ := os.ReadDir("/proc/self/fd")
		k := 0
		for _, e := range ents {
			if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, many+"/") {
				k++
			}
		}
		return k
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	most := 0
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := s.Client("alice.example", false)
			for i := w; i < n; i += 8 {
				r := hosttest.Get(t, c, fmt.Sprintf("https://alice.example/many/f%d.txt", i))
				if r.StatusCode != 200 || r.Body != fmt.Sprint(i) {
					t.Errorf("f%d.txt: %d %q", i, r.StatusCode, r.Body)
					return
				}
				if i%500 == w {
					k := kept()
					mu.Lock()
					most = max(most, k)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	// At most 100 in the cache, plus one per request being served.
	if k := kept(); k > 100 || most > 108 {
		t.Fatalf("%d descriptors of many/ open at the end, %d at most during the run; want <= 100 (+8 in flight)", k, most)
	}
	mfs := scrape(t, adminTarget{s.AdminAddr(), s.AdminToken()})
	if v, ok := metricValue(mfs, "hostd_open_file_cache_entries", map[string]string{"vhost": "alice.example"}); !ok || v > 100 {
		t.Fatalf("hostd_open_file_cache_entries = %v %v", v, ok)
	}
	if err := os.Remove(filepath.Join(dir, "vhosts.d/alice.toml")); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Reload(context.Background()); err != nil || res.Removed != 1 {
		t.Fatalf("reload: %+v %v", res, err)
	}
	until(t, "the removed vhost's descriptors closed", func() bool { return kept() == 0 })
}

// TestOpenFileCacheTruncated: a cached file truncated (same inode) while
// its body is being sent ends that response short, as without the cache
// and as nginx does (the client sees fewer bytes than Content-Length and
// the connection is closed); the next request gets the new size.
func TestOpenFileCacheTruncated(t *testing.T) {
	requireRoot(t)
	s, dir := openFileSite(t, "uring", "1h", 100)
	big := filepath.Join(dir, "alice/big.bin")
	content := strings.Repeat("0123456789abcdef", 1<<18) // 4 MiB
	if err := os.WriteFile(big, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	chown(t, dir, aliceUID, 0o644, "alice/big.bin")
	alice := s.Client("alice.example", false)
	mustGet(t, alice, "https://alice.example/big.bin", 200, content)

	resp, err := alice.Get("https://alice.example/big.bin") // a hit
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 64<<10)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 1000); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := len(head) + len(rest); err == nil && got == len(content) && string(head)+string(rest) != content {
		t.Fatalf("a torn body of the full length")
	}
	if got := len(head) + len(rest); got > len(content) {
		t.Fatalf("%d bytes, more than Content-Length %d", got, len(content))
	}
	mustGet(t, s.Client("alice.example", false), "https://alice.example/big.bin", 200, content[:1000])

	// Growing (same inode): the next response has the new length.
	f, err := os.OpenFile(big, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("tail")
	f.Close()
	mustGet(t, s.Client("alice.example", false), "https://alice.example/big.bin", 200, content[:1000]+"tail")
}
