package host_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/host/session/sessiontest"
)

const (
	carolUID = 31003
	daveUID  = 31004
)

// roleHook is dave's and carol's session hook: /s/login?role=R logs in
// with role R, /s/ shows the role.
const roleHook = `
if r.path == "/s/login" then
  r.session:regenerate_id()
  r.session:set("role", r.args.role)
  r:write("ok")
  return
end
r:write("role=", tostring(r.session:get("role")))
`

// storeSite serves dave (a session hook) and carol (the same hook, plus
// CGI scripts that talk to the session store directly, as any tenant's
// code can) in thread mode, with sessions in the store of sessions.
func storeSite(t *testing.T, sessions string, cgi hosttest.Files) *hosttest.Server {
	t.Helper()
	dir := tenantDir(t)
	vhost := func(name string, uid int) string {
		return fmt.Sprintf(`server_name = %q
root = "../%s"
user = "%d"
sandbox = "thread"
[cgi]
enabled = true
[[hooks]]
phase = "content"
file = "../hooks/%s.lua"
path = "/s/*"
`, name+".example", name, uid, name)
	}
	files := hosttest.Files{
		"hostd.toml":          hosttest.MainConfig + "\n" + sessions,
		"vhosts.d/carol.toml": vhost("carol", carolUID),
		"vhosts.d/dave.toml":  vhost("dave", daveUID),
		"hooks/carol.lua":     roleHook,
		"hooks/dave.lua":      roleHook,
		"carol/index.html":    "carol\n",
		"dave/index.html":     "dave\n",
	}
	for k, v := range cgi {
		files["carol/cgi/"+k] = v
	}
	hosttest.Write(t, dir, files)
	for _, p := range []string{"carol", "carol/cgi"} {
		os.Chown(filepath.Join(dir, p), carolUID, carolUID)
	}
	for k := range cgi {
		p := filepath.Join(dir, "carol/cgi", k)
		os.Chown(p, carolUID, carolUID)
		os.Chmod(p, 0o755)
	}
	return hosttest.StartDir(t, dir)
}

// carolRuns runs carol's CGI script with query q and returns its output.
func carolRuns(t *testing.T, s *hosttest.Server, script, q string) string {
	t.Helper()
	resp := hosttest.Get(t, s.Client("carol.example", false), "https://carol.example/cgi/"+script+"?"+q)
	if resp.StatusCode != 200 {
		t.Fatalf("carol's %s?%s: %d %q", script, q, resp.StatusCode, resp.Body)
	}
	return resp.Body
}

// redisCGI is carol's client for a Redis at addr: redis-cli with the
// command in the query string (words separated by '&').
func redisCGI(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf(`#!/bin/sh
printf 'Content-Type: text/plain\n\n'
IFS='&'
set -f
set -- $QUERY_STRING
/usr/bin/redis-cli -h %s -p %s "$@" 2>&1
`, host, port)
}

// sessionKeys returns the session keys in redis-cli's KEYS output.
func sessionKeys(t *testing.T, out string) []string {
	t.Helper()
	var keys []string
	for _, k := range strings.Fields(out) {
		if strings.HasPrefix(k, "hostd:sess:") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func login(t *testing.T, s *hosttest.Server, name, role string) (cookie string) {
	t.Helper()
	c := s.Client(name, false)
	resp := getWithCookie(t, c, "https://"+name+"/s/login?role="+role, "")
	return sessionCookie(t, resp)
}

func role(t *testing.T, s *hosttest.Server, name, cookie string) string {
	t.Helper()
	return getWithCookie(t, s.Client(name, false), "https://"+name+"/s/", cookie).Body
}

// TestSessionStoreSealed is the shared-Redis attack of issue 15 with
// sealing alone (a Redis without a password): carol's CGI can list the
// keys, but they name no vhost; dave's value is ciphertext; rewriting it,
// copying carol's own session over it, or writing a forged session under
// the old unkeyed key all leave dave's hook with a fresh, empty session.
func TestSessionStoreSealed(t *testing.T) {
	requireRoot(t)
	rd := sessiontest.Redis(t)
	s := storeSite(t, fmt.Sprintf("[sessions]\nstore = \"redis\"\nurl = \"redis://%s/0\"\n", rd.Addr),
		hosttest.Files{"r.cgi": redisCGI(rd.Addr)})

	before := sessionKeys(t, carolRuns(t, s, "r.cgi", "KEYS&*"))
	dave := login(t, s, "dave.example", "user")
	if got := role(t, s, "dave.example", dave); got != "role=user" {
		t.Fatalf("dave: %q", got)
	}
	after := sessionKeys(t, carolRuns(t, s, "r.cgi", "KEYS&*"))
	if len(after) != len(before)+1 {
		t.Fatalf("keys before %v after %v", before, after)
	}
	var daveKey string
	for _, k := range after {
		if !slices.Contains(before, k) {
			daveKey = k
		}
	}
	// Listing: the keys name neither the vhost nor the id.
	id := strings.TrimPrefix(dave, "hostd_session=")
	if strings.Contains(daveKey, "dave") || strings.Contains(daveKey, id) {
		t.Fatalf("key %q names dave or his session id", daveKey)
	}
	// Reading: ciphertext.
	if got := carolRuns(t, s, "r.cgi", "GET&"+daveKey); strings.Contains(got, "role") || strings.Contains(got, "user") || len(got) < 40 {
		t.Fatalf("carol read dave's session: %q", got)
	}
	// Changing: dave's session is refused, and the refusal is logged.
	if got := carolRuns(t, s, "r.cgi", `SET&`+daveKey+`&{"role":"admin"}`); !strings.Contains(got, "OK") {
		t.Fatalf("SET: %q", got)
	}
	if got := role(t, s, "dave.example", dave); got != "role=nil" {
		t.Fatalf("dave's hook after carol's SET: %q", got)
	}
	if !strings.Contains(s.Logs.String(), "session value failed authentication") {
		t.Error("no log line for the refused session value")
	}
	// Copying carol's own (validly sealed) session over dave's key.
	dave = login(t, s, "dave.example", "user")
	before = after
	after = sessionKeys(t, carolRuns(t, s, "r.cgi", "KEYS&*"))
	carol := login(t, s, "carol.example", "admin")
	if got := role(t, s, "carol.example", carol); got != "role=admin" {
		t.Fatalf("carol: %q", got)
	}
	all := sessionKeys(t, carolRuns(t, s, "r.cgi", "KEYS&*"))
	var carolKey string
	for _, k := range all {
		if !slices.Contains(after, k) {
			carolKey = k
		}
	}
	for _, k := range after {
		if !slices.Contains(before, k) {
			daveKey = k
		}
	}
	if carolKey == "" || daveKey == "" {
		t.Fatalf("keys: %v / %v / %v", before, after, all)
	}
	if got := carolRuns(t, s, "r.cgi", "COPY&"+carolKey+"&"+daveKey+"&REPLACE"); !strings.Contains(got, "1") {
		t.Fatalf("COPY: %q", got)
	}
	if got := role(t, s, "dave.example", dave); got != "role=nil" {
		t.Fatalf("dave's hook after carol copied her session over his: %q", got)
	}
	// Forging: the key scheme before sealing was sha256(vhost, id), which
	// anyone who knows an id could compute; nothing reads those keys now,
	// and carol cannot compute the HMAC keys without the server secret.
	dave = login(t, s, "dave.example", "user")
	carolRuns(t, s, "r.cgi", "SET&hostd:sess:dave.example:"+hashOldKey("dave.example", strings.TrimPrefix(dave, "hostd_session="))+`&{"role":"admin"}`)
	if got := role(t, s, "dave.example", dave); got != "role=user" {
		t.Fatalf("dave's hook after a forged old-style key: %q", got)
	}
	// The secret is the server's alone.
	fi, err := os.Stat(filepath.Join(s.Dir, "state", "session.keys"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("session.keys: %v %v", fi, err)
	}
	if got := carolRuns(t, s, "r.cgi", "PING"); !strings.Contains(got, "PONG") {
		t.Fatalf("PING: %q", got) // the attack really reached Redis
	}
}

// TestSessionStoreAuth: with a Redis password only hostd holds (in a
// password_file of root's), carol's code cannot even run a command;
// dave's sessions work.
func TestSessionStoreAuth(t *testing.T) {
	requireRoot(t)
	rd := sessiontest.Redis(t, "--requirepass", "hostd-only-pw")
	pwFile := filepath.Join(t.TempDir(), "redis.pass") // 0700 directory of root's
	if err := os.WriteFile(pwFile, []byte("hostd-only-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := storeSite(t, fmt.Sprintf("[sessions]\nstore = \"redis\"\nurl = \"redis://%s/0\"\npassword_file = %q\n", rd.Addr, pwFile),
		hosttest.Files{"r.cgi": redisCGI(rd.Addr)})
	dave := login(t, s, "dave.example", "user")
	if got := role(t, s, "dave.example", dave); got != "role=user" {
		t.Fatalf("dave: %q", got)
	}
	for _, cmd := range []string{"KEYS&*", "PING", "GET&x", "SET&x&y"} {
		if got := carolRuns(t, s, "r.cgi", cmd); !strings.Contains(got, "NOAUTH") {
			t.Errorf("carol's %s without the password: %q", cmd, got)
		}
	}
}

// TestSessionStoreMemcached: memcached has no authentication that gomemcache
// speaks, so carol's CGI can reach it; it can list the keys (lru_crawler
// metadump), but what it reads is ciphertext and what it writes is refused.
func TestSessionStoreMemcached(t *testing.T) {
	requireRoot(t)
	mc := sessiontest.Memcached(t)
	s := storeSite(t, fmt.Sprintf("[sessions]\nstore = \"memcached\"\nservers = [%q]\n", mc.Addr), hosttest.Files{"m.cgi": memcachedCGI(mc.Addr)})
	dave := login(t, s, "dave.example", "user")
	var daveKey string
	for _, f := range strings.Fields(carolRuns(t, s, "m.cgi", "dump")) {
		if k, ok := strings.CutPrefix(f, "key="); ok {
			daveKey, _ = url.QueryUnescape(k)
		}
	}
	if !strings.HasPrefix(daveKey, "hostd:sess:") || strings.Contains(daveKey, "dave") {
		t.Fatalf("metadump key %q", daveKey)
	}
	if got := carolRuns(t, s, "m.cgi", "get&"+daveKey); !strings.Contains(got, "VALUE") || strings.Contains(got, "role") {
		t.Fatalf("carol read dave's session: %q", got)
	}
	if got := carolRuns(t, s, "m.cgi", "set&"+daveKey); !strings.Contains(got, "STORED") {
		t.Fatalf("set: %q", got)
	}
	if got := role(t, s, "dave.example", dave); got != "role=nil" {
		t.Fatalf("dave's hook after carol's set: %q", got)
	}
}

// hashOldKey is the store key scheme before sealing:
// sha256(vhost "\x00" id), public and unkeyed.
func hashOldKey(vhost, id string) string {
	sum := sha256.Sum256([]byte(vhost + "\x00" + id))
	return hex.EncodeToString(sum[:])
}

// memcachedCGI is carol's client for the memcached at addr, in bash over
// /dev/tcp: ?dump lists the keys, ?get&KEY reads one, ?set&KEY writes a
// forged session there.
func memcachedCGI(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf(`#!/bin/bash
printf 'Content-Type: text/plain\n\n'
IFS='&' read -r op key <<< "$QUERY_STRING"
exec 3<>/dev/tcp/127.0.0.1/%s
case $op in
dump) printf 'lru_crawler metadump all\r\n' >&3 ;;
get)  printf 'get %%s\r\n' "$key" >&3 ;;
set)  v='{"role":"admin"}'; printf 'set %%s 0 600 %%d\r\n%%s\r\n' "$key" ${#v} "$v" >&3 ;;
esac
while IFS= read -r -t 2 line <&3; do
  printf '%%s\n' "$line" | tr -d '\r\000'
  case $line in END*|STORED*|ERROR*|CLIENT_ERROR*) break ;; esac
done
`, port)
}

// TestSessionStoreMemcachedAuth: with memcached's ASCII authentication
// (memcached -Y) and the credentials in hostd's password_file, carol's
// code cannot read, list or write anything; dave's sessions work.
func TestSessionStoreMemcachedAuth(t *testing.T) {
	requireRoot(t)
	auth := filepath.Join(t.TempDir(), "memcached.auth")
	if err := os.WriteFile(auth, []byte("hostd:only-hostd-knows\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mc := sessiontest.Memcached(t, "-Y", auth)
	s := storeSite(t, fmt.Sprintf("[sessions]\nstore = \"memcached\"\nservers = [%q]\npassword_file = %q\n", mc.Addr, auth),
		hosttest.Files{"m.cgi": memcachedCGI(mc.Addr)})
	dave := login(t, s, "dave.example", "user")
	if got := role(t, s, "dave.example", dave); got != "role=user" {
		t.Fatalf("dave: %q", got)
	}
	for _, q := range []string{"dump", "get&x", "set&x"} {
		if got := carolRuns(t, s, "m.cgi", q); strings.Contains(got, "key=") || strings.Contains(got, "STORED") ||
			!strings.Contains(got, "CLIENT_ERROR") {
			t.Errorf("carol's %s without the credentials: %q", q, got)
		}
	}
}
