package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Peers: the web servers an operator runs today, measured in the same run
// as hostd (Options.Peers): the same cells over HTTPS keep-alive, the same
// pinning (one process, one worker, on the server's CPUs), the same load
// generator, the same TLS (TLS 1.3, an ECDSA P-256 certificate for the
// tenants' names) and the same bodies (the 1 KiB file, "Hello, world!\n"
// as text/plain with a Content-Length). hostd bench installs nothing:
// `make bench-peers-deps` installs them from Debian. Their configurations
// are generated into the bench's temp dir and each is started and stopped
// by its PID (SIGTERM, then SIGKILL).

// PeerNames are the peers in report order; a peer's cells are named
// handler/PEER/https.
var PeerNames = []string{"nginx", "h2o", "apache"}

// peerHandlers are the handlers peers serve.
var peerHandlers = []string{"static", "static-cached", "native", "lua", "mruby"}

// peerColor gives every peer its color in the handler chart.
var peerColor = map[string]string{"nginx": "#999933", "h2o": "#882255", "apache": "#332288"}

func isPeer(mode string) bool {
	for _, p := range PeerNames {
		if p == mode {
			return true
		}
	}
	return false
}

// peerSupport says which handlers a peer serves here and, for the others,
// why not.
type peerSupport struct {
	bin string
	why map[string]string // handler -> reason; "*": the peer is unusable
}

const (
	nginxModules  = "/usr/lib/nginx/modules"
	apacheModules = "/usr/lib/apache2/modules"
)

// probePeers finds the installed peers and their modules.
func probePeers(ctx context.Context) map[string]*peerSupport {
	ps := map[string]*peerSupport{}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	find := func(name string, paths ...string) *peerSupport {
		s := &peerSupport{why: map[string]string{}}
		for _, p := range append([]string{name}, paths...) {
			if b, err := exec.LookPath(p); err == nil {
				s.bin = b
				return s
			}
		}
		s.why["*"] = name + " not installed (make bench-peers-deps)"
		return s
	}
	n := find("nginx", "/usr/sbin/nginx")
	n.why["mruby"] = "nginx has no mruby module in Debian"
	if !exists(filepath.Join(nginxModules, "ngx_http_lua_module.so")) {
		n.why["lua"] = "libnginx-mod-http-lua not installed"
	}
	ps["nginx"] = n
	h := find("h2o")
	// h2o keeps the descriptors it opened for one pass of its event loop
	// (its filecache, not configurable as a validity): its static cell
	// already has that cache; a second one would measure the same.
	h.why["static-cached"] = "h2o has no open_file_cache_valid (its file cache lives for one event-loop pass, in its static cell too)"
	h.why["native"] = "h2o has no fixed-response directive (its hello is the mruby one)"
	h.why["lua"] = "h2o has no Lua handler"
	if h.bin != "" {
		out, _ := exec.CommandContext(ctx, h.bin, "--version").CombinedOutput()
		if !strings.Contains(string(out), "mruby: YES") {
			h.why["mruby"] = "this h2o is built without mruby"
		}
	}
	ps["h2o"] = h
	a := find("apache2", "/usr/sbin/apache2")
	a.why["native"] = "Apache has no fixed-response directive"
	a.why["mruby"] = "mod_mruby is not in Debian"
	a.why["static-cached"] = "the bench does not configure Apache's mod_file_cache"
	if !exists(filepath.Join(apacheModules, "mod_lua.so")) {
		a.why["lua"] = "mod_lua not installed"
	}
	ps["apache"] = a
	return ps
}

// skip returns why handler cannot run on the peer, or "".
func (p *peerSupport) skip(handler string) string {
	if w := p.why["*"]; w != "" {
		return w
	}
	return p.why[handler]
}

// peerSite holds what the peers share: the certificate and the document
// root (tenant 1's: every tenant has the same files).
type peerSite struct {
	once      sync.Once
	err       error
	cert, key string
	pub, dir  string
	luaApache string
	names     []string // the tenants' names, then their cached twins' (site.cachedName)
}

func (s *site) peerSite() *peerSite {
	names := make([]string, 0, 2*s.tenants)
	for i := range s.tenants {
		names = append(names, s.tenantName(i))
	}
	for i := range s.tenants {
		names = append(names, s.cachedName(i))
	}
	return &peerSite{dir: filepath.Join(s.dir, "peers"), pub: filepath.Join(s.dir, "tenants", s.tenantName(0), "public"), names: names}
}

// prepare writes the certificate (ECDSA P-256, like hostd's generated
// ones) and the Apache Lua handler once.
func (ps *peerSite) prepare() error {
	ps.once.Do(func() {
		ps.cert, ps.key = filepath.Join(ps.dir, "cert.pem"), filepath.Join(ps.dir, "key.pem")
		ps.luaApache = filepath.Join(ps.dir, "hello_apache.lua")
		if err := os.MkdirAll(filepath.Join(ps.dir, "tmp"), 0o755); err != nil {
			ps.err = err
			return
		}
		if ps.err = writeCert(ps.cert, ps.key, ps.names); ps.err != nil {
			return
		}
		ps.err = writeFile(ps.luaApache, apacheLuaHello, 0o644)
	})
	return ps.err
}

func writeCert(certFile, keyFile string, names []string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writeFile(certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), 0o644); err != nil {
		return err
	}
	return writeFile(keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})), 0o600)
}

const apacheLuaHello = `-- the bench's Lua hello for mod_lua
function handle(r)
  r.content_type = "text/plain"
  r.headers_out["Content-Length"] = "14"
  r:puts("Hello, world!\n")
  return apache2.OK
end
`

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// peerConfig writes the peer's configuration for the two ports and
// returns its command line.
func (ps *peerSite) peerConfig(name, bin string, https, http int) ([]string, error) {
	d := filepath.Join(ps.dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, err
	}
	var conf, file string
	var args []string
	switch name {
	case "nginx":
		var mods string
		if _, err := os.Stat(filepath.Join(nginxModules, "ngx_http_lua_module.so")); err == nil {
			mods = fmt.Sprintf("load_module %s/ndk_http_module.so;\nload_module %s/ngx_http_lua_module.so;\n", nginxModules, nginxModules)
		}
		file = filepath.Join(d, "nginx.conf")
		conf = mods + fmt.Sprintf(`# hostd bench peer: one process, one worker
worker_processes 1;
master_process off;
daemon off;
error_log %[1]s/error.log;
pid %[1]s/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[2]s; proxy_temp_path %[2]s; fastcgi_temp_path %[2]s; uwsgi_temp_path %[2]s; scgi_temp_path %[2]s;
  types { text/plain txt; }
  default_type application/octet-stream;
  keepalive_requests 100000000;
  server {
    listen 127.0.0.1:%[3]d ssl;
    listen 127.0.0.1:%[4]d;
    ssl_certificate %[5]s;
    ssl_certificate_key %[6]s;
    ssl_protocols TLSv1.3;
    root %[7]s;
    location = /native { default_type text/plain; return 200 "Hello, world!\n"; }
`, d, filepath.Join(ps.dir, "tmp"), https, http, ps.cert, ps.key, ps.pub)
		if mods != "" {
			conf += `    location = /lua { default_type text/plain; content_by_lua_block { ngx.header["Content-Length"] = 14; ngx.print("Hello, world!\n") } }
`
		}
		conf += "  }\n"
		// The Cached handlers' names: the same root with nginx's
		// open_file_cache, valid for as long as hostd's twin vhosts'.
		conf += fmt.Sprintf(`  server {
    listen 127.0.0.1:%[1]d ssl;
    listen 127.0.0.1:%[2]d;
    server_name %[3]s;
    ssl_certificate %[4]s;
    ssl_certificate_key %[5]s;
    ssl_protocols TLSv1.3;
    root %[6]s;
    open_file_cache max=1000 inactive=%[7]ds;
    open_file_cache_valid %[7]ds;
  }
}
`, https, http, strings.Join(ps.names[len(ps.names)/2:], " "), ps.cert, ps.key, ps.pub, int(OpenFileCacheValid/time.Second))
		args = []string{bin, "-p", d, "-c", file}
	case "h2o":
		file = filepath.Join(d, "h2o.conf")
		conf = fmt.Sprintf(`# hostd bench peer: one process, one thread
listen:
  host: 127.0.0.1
  port: %d
  ssl:
    certificate-file: %s
    key-file: %s
listen:
  host: 127.0.0.1
  port: %d
num-threads: 1
error-log: %s/error.log
hosts:
  default:
    paths:
      /mruby:
        mruby.handler: |
          Proc.new do |env|
            [200, {"content-type" => "text/plain", "content-length" => "14"}, ["Hello, world!\n"]]
          end
      /:
        file.dir: %s
`, https, ps.cert, ps.key, http, d, ps.pub)
		args = []string{bin, "-c", file}
	case "apache":
		file = filepath.Join(d, "apache.conf")
		user := ""
		if os.Geteuid() == 0 {
			user = "User www-data\nGroup www-data\n"
		}
		conf = fmt.Sprintf(`# hostd bench peer: one process (-X), event MPM
ServerRoot %[1]s
LoadModule mpm_event_module %[2]s/mod_mpm_event.so
LoadModule authz_core_module %[2]s/mod_authz_core.so
LoadModule mime_module %[2]s/mod_mime.so
LoadModule ssl_module %[2]s/mod_ssl.so
LoadModule lua_module %[2]s/mod_lua.so
ServerName localhost
Listen 127.0.0.1:%[3]d https
Listen 127.0.0.1:%[4]d http
PidFile %[1]s/apache.pid
ErrorLog %[1]s/error.log
Mutex file:%[1]s
%[5]sStartServers 1
ServerLimit 1
ThreadsPerChild 64
MaxRequestWorkers 64
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 30
TypesConfig /etc/mime.types
DocumentRoot %[6]s
<Directory %[6]s>
  Require all granted
</Directory>
LuaMapHandler ^/lua$ %[7]s handle
<VirtualHost 127.0.0.1:%[3]d>
  SSLEngine on
  SSLCertificateFile %[8]s
  SSLCertificateKeyFile %[9]s
  SSLProtocol TLSv1.3
</VirtualHost>
`, d, apacheModules, https, http, user, ps.pub, ps.luaApache, ps.cert, ps.key)
		args = []string{bin, "-X", "-f", file}
	default:
		return nil, fmt.Errorf("unknown peer %q", name)
	}
	if err := writeFile(file, conf, 0o644); err != nil {
		return nil, err
	}
	return args, nil
}

// startPeer starts a peer pinned to cpus and waits until its HTTPS port
// accepts connections.
func (ps *peerSite) startPeer(ctx context.Context, name, bin string, cpus []int) (*server, error) {
	if err := ps.prepare(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	hp, err := freePort()
	if err != nil {
		return nil, err
	}
	pp, err := freePort()
	if err != nil {
		return nil, err
	}
	args, err := ps.peerConfig(name, bin, hp, pp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	setDeathSignal(cmd)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := startPinned(cmd, cpus); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &server{cmd: cmd, exited: make(chan struct{}),
		httpsAddr: "127.0.0.1:" + strconv.Itoa(hp), httpAddr: "127.0.0.1:" + strconv.Itoa(pp)}
	go func() {
		cmd.Wait()
		s.logMu.Lock()
		s.logTail = strings.Split(strings.TrimSpace(out.String()), "\n")
		s.logMu.Unlock()
		close(s.exited)
	}()
	accepts := func(addr string) error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}
	for i := 0; ; i++ {
		err := accepts(s.httpsAddr)
		if err == nil {
			if err = accepts(s.httpAddr); err == nil {
				return s, nil
			}
		}
		if !s.alive() {
			return nil, fmt.Errorf("%s exited: %s", name, s.tail())
		}
		if i == 200 || ctx.Err() != nil {
			s.stop()
			return nil, errors.Join(fmt.Errorf("%s not accepting on %s", name, s.httpsAddr), err, ctx.Err())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// peerTargets are the report's hostd/peer ratios: hostd's cell (mode
// none; mruby also in uring, the h2o row) over the peer's.
func (r *Report) peerTargets() {
	add := func(h, mode, p string, goal float64) {
		a, b := r.cell(h, mode, "https"), r.cell(h, p, "https")
		if a == nil || b == nil || b.Result.RPS == 0 {
			return
		}
		t := Target{Name: fmt.Sprintf("%s: hostd %s / %s", h, mode, p), Value: a.Result.RPS / b.Result.RPS, Goal: goal,
			Note: "same pinning, load generator, TLS and body"}
		if a.ServerCPUPerReq > 0 && b.ServerCPUPerReq > 0 {
			t.ByCPU = float64(b.ServerCPUPerReq) / float64(a.ServerCPUPerReq)
		}
		r.Targets = append(r.Targets, t)
		r.PeerRatios = append(r.PeerRatios, t)
	}
	for _, h := range peerHandlers {
		for _, p := range PeerNames {
			goal := 0.0
			switch {
			case p == "nginx":
				goal = 1
			case p == "h2o" && h == "mruby":
				add(h, "uring", p, 0.9)
			}
			add(h, "none", p, goal)
		}
	}
}
