package scalability

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostd/hostd/bench/load"
	"github.com/hostd/hostd/tenant"
)

// Options configures Run. The zero value works except for Binary.
type Options struct {
	// Binary is the hostd executable to start as the server (required).
	Binary string
	// Clients are the sweep points. Empty: start at StartClients and
	// double until four times the saturating count (or MaxClients).
	Clients []int
	// StartClients is the first point of the automatic sweep (default 32).
	StartClients int
	// MaxClients caps the automatic sweep (default 8192).
	MaxClients int
	// Duration is the measured time per point (default 15s).
	Duration time.Duration
	// Warmup runs before each measurement (default 5s).
	Warmup time.Duration
	// ThinkTime is the mean of the exponential think time between
	// requests, before Scale (default 7s, as in the study).
	ThinkTime time.Duration
	// Timeout is the client timeout, before Scale (default 10s): a client
	// waiting longer for a handshake or a reply drops the connection and
	// starts over with a new TLS session.
	Timeout time.Duration
	// Scale multiplies ThinkTime and Timeout so that a short run sees the
	// same dynamics (default 0.05: 350ms think, 500ms timeout).
	Scale float64
	// RequestsPerSession is the mean of the geometric number of requests
	// in a session (default 10).
	RequestsPerSession int
	// PageSize is the size of the static page requested (default 8KiB).
	PageSize int
	// KeyType is the server certificate's key: "rsa2048" (default: a
	// handshake costs the server far more than the client, as in the
	// study) or "ecdsa" (P-256, hostd's generated default).
	KeyType string
	// ServerCPUs is how many CPUs the server gets (GOMAXPROCS and
	// affinity; default half the CPUs, the load generator gets the rest).
	ServerCPUs int
	// NoPin leaves the server and the load generator unpinned.
	NoPin bool
	// Admission holds the [server] keys of the runs with admission
	// control (e.g. MaxHandshakes: 8); its zero keys keep hostd's
	// defaults, except handshake_wait, set to a fifth of the client
	// timeout (an operator sets it well below the clients' patience).
	Admission tenant.Server
	// ServerLog receives the server's log (warnings and errors); nil
	// discards it.
	ServerLog io.Writer
}

func (o *Options) defaults() error {
	if o.Binary == "" {
		return errors.New("scalability: Options.Binary (the hostd executable) is required")
	}
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	defD := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&o.StartClients, 32)
	def(&o.MaxClients, 8192)
	defD(&o.Duration, 15*time.Second)
	defD(&o.Warmup, 5*time.Second)
	defD(&o.ThinkTime, 7*time.Second)
	defD(&o.Timeout, 10*time.Second)
	if o.Scale <= 0 {
		o.Scale = 0.05
	}
	def(&o.RequestsPerSession, 10)
	def(&o.PageSize, 8<<10)
	if o.KeyType == "" {
		o.KeyType = "rsa2048"
	}
	if o.KeyType != "rsa2048" && o.KeyType != "ecdsa" {
		return fmt.Errorf("scalability: key type %q: want rsa2048 or ecdsa", o.KeyType)
	}
	return nil
}

func (o *Options) admission() tenant.Server {
	s := o.Admission
	if s.HandshakeWait == 0 {
		s.HandshakeWait = tenant.Duration(o.timeout() / 5)
	}
	return s
}

func (o *Options) think() time.Duration   { return time.Duration(float64(o.ThinkTime) * o.Scale) }
func (o *Options) timeout() time.Duration { return time.Duration(float64(o.Timeout) * o.Scale) }

// Point is one measurement: a client count with admission control on or off.
type Point struct {
	Clients   int
	Admission bool
	// RepliesPerSec counts successful (200) replies.
	RepliesPerSec float64
	// P90 is the 90th percentile reply latency, including the handshake
	// for a session's first request.
	P90 time.Duration
	// Timeouts counts clients that gave up (and started over).
	Timeouts int
	// Refused counts connections closed before their handshake finished
	// (shed by admission control) and 429/503 replies.
	Refused int
	// Full and Resumed count completed handshakes.
	Full, Resumed int
	// CPU is the server's CPU time over the measurement, as a fraction of
	// its CPUs (1 = all busy).
	CPU float64
	// CPUSeconds is the server's CPU time during the measurement.
	CPUSeconds float64
	// LoadCPU is the load generator's CPU time over the measurement, as
	// a fraction of its CPUs: near 1, the clients, not the server, limit
	// the point.
	LoadCPU float64
}

// FullPct is the percentage of full handshakes among completed ones.
func (p Point) FullPct() float64 {
	if p.Full+p.Resumed == 0 {
		return 0
	}
	return 100 * float64(p.Full) / float64(p.Full+p.Resumed)
}

// Report is the result of Run.
type Report struct {
	Options Options
	// Off and On are the sweeps with admission control off and on.
	Off, On []Point
}

// Run sweeps the client count against a fresh `hostd serve` per point,
// first with admission control off, then on, and writes one progress line
// per point to progress (may be nil).
func Run(ctx context.Context, opts Options, progress io.Writer) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if progress == nil {
		progress = io.Discard
	}
	dir, err := os.MkdirTemp("", "hostd-scalability-")
	if err != nil {
		return nil, fmt.Errorf("scalability: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := writeSite(dir, &opts); err != nil {
		return nil, err
	}
	serverCPUs, loadCPUs := splitCPUs(opts.ServerCPUs)
	if opts.NoPin {
		serverCPUs, loadCPUs = nil, nil
	}
	if loadCPUs != nil {
		restore, err := load.PinProcess(loadCPUs)
		if err != nil {
			return nil, fmt.Errorf("scalability: pin load generator: %w", err)
		}
		defer restore()
	}
	rep := &Report{Options: opts}
	fmt.Fprintf(progress, "scalability: think %v, timeout %v, %d requests/session, %s key, server CPUs %v, load CPUs %v\n",
		opts.think(), opts.timeout(), opts.RequestsPerSession, opts.KeyType, serverCPUs, loadCPUs)
	measure := func(n int, admission bool) (Point, error) {
		p, err := runPoint(ctx, &opts, dir, n, admission, serverCPUs, loadCPUs)
		if err != nil {
			return p, err
		}
		fmt.Fprintf(progress, "  clients %5d admission %-3s  %8.1f replies/s  p90 %7v  timeouts %5d  refused %6d  full %5.1f%%  cpu %5.1f%%  load cpu %5.1f%%\n",
			n, onOff(admission), p.RepliesPerSec, p.P90.Round(time.Millisecond), p.Timeouts, p.Refused, p.FullPct(), 100*p.CPU, 100*p.LoadCPU)
		return p, nil
	}
	points := opts.Clients
	auto := len(points) == 0
	if auto {
		points = []int{opts.StartClients}
	}
	for i := 0; i < len(points); i++ {
		n := points[i]
		off, err := measure(n, false)
		if err != nil {
			return rep, err
		}
		rep.Off = append(rep.Off, off)
		on, err := measure(n, true)
		if err != nil {
			return rep, err
		}
		rep.On = append(rep.On, on)
		if auto && n*2 <= opts.MaxClients {
			satOff, satOn := Saturation(rep.Off), Saturation(rep.On)
			if satOff == 0 || satOn == 0 || n < 4*max(satOff, satOn) {
				points = append(points, n*2)
			}
		}
	}
	return rep, nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Saturation returns the saturating client count of a sweep in
// increasing client order: the first point after which doubling the
// clients adds less than 20% throughput (a server that collapses
// saturates at the point before the collapse). 0 means not saturated
// within the sweep.
func Saturation(pts []Point) int {
	for i := 0; i+1 < len(pts); i++ {
		growth := float64(pts[i+1].Clients) / float64(pts[i].Clients)
		if pts[i+1].RepliesPerSec < pts[i].RepliesPerSec*(1+0.2*(growth-1)) {
			return pts[i].Clients
		}
	}
	return 0
}

// writeSite writes the server's static page and a certificate of the
// configured key type; startServer writes the configuration.
func writeSite(dir string, o *Options) error {
	page := make([]byte, o.PageSize)
	for i := range page {
		page[i] = 'a' + byte(i%26)
	}
	files := map[string][]byte{"site/index.html": page, "vhosts.d/": nil}
	certPEM, keyPEM, err := selfSigned(o.KeyType)
	if err != nil {
		return err
	}
	files["cert.pem"], files["key.pem"] = certPEM, keyPEM
	for name, b := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("scalability: %w", err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("scalability: %w", err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return fmt.Errorf("scalability: %w", err)
		}
	}
	return nil
}

func selfSigned(keyType string) (certPEM, keyPEM []byte, err error) {
	var key any
	var pub any
	if keyType == "rsa2048" {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, nil, fmt.Errorf("scalability: %w", err)
		}
		key, pub = k, &k.PublicKey
	} else {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, fmt.Errorf("scalability: %w", err)
		}
		key, pub = k, &k.PublicKey
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "bench.example"},
		DNSNames:     []string{"bench.example"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, nil, fmt.Errorf("scalability: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("scalability: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

// mainConfig is the server's main file. Without admission control every
// overload limit is off; with it, s's keys apply, and hostd's defaults.
func mainConfig(addr string, admission bool, s tenant.Server) tenant.MainFile {
	if !admission {
		s = tenant.Server{MaxHandshakes: -1, AcceptRate: -1, MaxConnsPerIP: -1}
	}
	s.ListenHTTPS, s.StateDir = addr, "state"
	return tenant.MainFile{Server: s}
}

// server is a running `hostd serve`.
type server struct {
	cmd  *exec.Cmd
	addr string
	done chan error
}

func startServer(ctx context.Context, o *Options, dir string, admission bool, cpus []int) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("scalability: pick a port: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	vhost := tenant.VHost{ServerName: "bench.example", Root: "../site", TLSCert: "../cert.pem", TLSKey: "../key.pem"}
	if !admission {
		vhost.Limits.MaxConcurrent = -1
	}
	if err := tenant.WriteFile(filepath.Join(dir, "vhosts.d/b.toml"), &vhost); err != nil {
		return nil, fmt.Errorf("scalability: %w", err)
	}
	cfg := filepath.Join(dir, "hostd.toml")
	if err := tenant.WriteFile(cfg, mainConfig(addr, admission, o.admission())); err != nil {
		return nil, fmt.Errorf("scalability: %w", err)
	}
	os.RemoveAll(filepath.Join(dir, "state"))
	cmd := exec.Command(o.Binary, "serve", "--config", cfg, "--log-level", "warn")
	cmd.Env = os.Environ()
	if len(cpus) > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("GOMAXPROCS=%d", len(cpus)))
	}
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	if o.ServerLog != nil {
		cmd.Stderr = io.MultiWriter(cmd.Stderr, o.ServerLog)
	}
	prepareChild(cmd, cpus)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("scalability: start %s: %w", o.Binary, err)
	}
	s := &server{cmd: cmd, addr: addr, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	if err := pinChild(cmd.Process.Pid, cpus); err != nil {
		s.stop()
		return nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return s, nil
		}
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("scalability: hostd serve exited (%v): %s", err, stderr.String())
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("scalability: hostd serve did not listen on %s: %s", addr, stderr.String())
		}
	}
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

type limitedWriter struct {
	mu sync.Mutex
	w  io.Writer
	n  int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// counters are what the clients record during the measured window.
type counters struct {
	measuring     atomic.Bool
	replies       atomic.Int64
	timeouts      atomic.Int64
	refused       atomic.Int64
	full, resumed atomic.Int64
	mu            sync.Mutex
	latencies     []time.Duration
}

func (c *counters) latency(d time.Duration) {
	c.mu.Lock()
	c.latencies = append(c.latencies, d)
	c.mu.Unlock()
}

func runPoint(ctx context.Context, o *Options, dir string, n int, admission bool, cpus, loadCPUs []int) (Point, error) {
	p := Point{Clients: n, Admission: admission}
	srv, err := startServer(ctx, o, dir, admission, cpus)
	if err != nil {
		return p, err
	}
	defer srv.stop()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var c counters
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runClient(ctx, o, srv.addr, i, &c)
		}()
	}
	select {
	case <-time.After(o.Warmup):
	case <-ctx.Done():
	}
	cpu0, _ := cpuTime(srv.cmd.Process.Pid)
	load0, _ := cpuTime(os.Getpid())
	t0 := time.Now()
	c.measuring.Store(true)
	select {
	case <-time.After(o.Duration):
	case <-ctx.Done():
	}
	c.measuring.Store(false)
	elapsed := time.Since(t0)
	cpu1, cpuErr := cpuTime(srv.cmd.Process.Pid)
	load1, _ := cpuTime(os.Getpid())
	cancel()
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return p, err
	}
	p.RepliesPerSec = float64(c.replies.Load()) / elapsed.Seconds()
	p.Timeouts = int(c.timeouts.Load())
	p.Refused = int(c.refused.Load())
	p.Full, p.Resumed = int(c.full.Load()), int(c.resumed.Load())
	if cpuErr == nil {
		p.CPUSeconds = (cpu1 - cpu0).Seconds()
		ncpu := len(cpus)
		if ncpu == 0 {
			ncpu = numCPU()
		}
		p.CPU = p.CPUSeconds / elapsed.Seconds() / float64(ncpu)
		p.LoadCPU = (load1 - load0).Seconds() / elapsed.Seconds() / float64(max(1, len(loadCPUs), numCPU()-ncpu))
	}
	if len(c.latencies) > 0 {
		slices.Sort(c.latencies)
		p.P90 = load.Percentile(c.latencies, 90)
	}
	return p, nil
}

// sourceAddr spreads the clients over 127.0.1.0/24 (loopback), one
// address per 8 clients, the way real clients come from many addresses.
func sourceAddr(i int) *net.TCPAddr {
	a := netip.AddrFrom4([4]byte{127, 0, 1, byte(1 + (i/8)%250)})
	return net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, 0))
}

// runClient is one emulated client: sessions of requests with
// exponential think times; a timeout drops the connection and the TLS
// session, the next attempt starts with a full handshake.
func runClient(ctx context.Context, o *Options, addr string, i int, c *counters) {
	rng := mrand.New(mrand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
	think := func() bool {
		d := time.Duration(rng.ExpFloat64() * float64(o.think()))
		select {
		case <-time.After(d):
			return true
		case <-ctx.Done():
			return false
		}
	}
	newTLS := func() *tls.Config {
		return &tls.Config{ServerName: "bench.example", InsecureSkipVerify: true,
			ClientSessionCache: tls.NewLRUClientSessionCache(1), NextProtos: []string{"http/1.1"}}
	}
	tc := newTLS()
	dialer := &net.Dialer{LocalAddr: sourceAddr(i)}
	req := []byte("GET /index.html HTTP/1.1\r\nHost: bench.example\r\n\r\n")
	// Ramp up: clients start at random times over the first half of the
	// warm-up, not all at once.
	select {
	case <-time.After(time.Duration(rng.Float64() * float64(o.Warmup/2))):
	case <-ctx.Done():
		return
	}
	for ctx.Err() == nil {
		start := time.Now()
		deadline := start.Add(o.timeout())
		dctx, cancel := context.WithDeadline(ctx, deadline)
		raw, err := dialer.DialContext(dctx, "tcp", addr)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if isTimeout(err) {
				c.count(&c.timeouts)
				tc = newTLS()
			} else {
				c.count(&c.refused)
				think()
			}
			continue
		}
		conn := tls.Client(raw, tc)
		conn.SetDeadline(deadline)
		if err := conn.HandshakeContext(ctx); err != nil {
			conn.Close()
			switch {
			case ctx.Err() != nil:
				return
			case isTimeout(err):
				c.count(&c.timeouts)
				tc = newTLS() // give up: the next attempt is a new session
			default:
				c.count(&c.refused) // shed before or during the handshake
				think()
			}
			continue
		}
		if conn.ConnectionState().DidResume {
			c.count(&c.resumed)
		} else {
			c.count(&c.full)
		}
		br := bufio.NewReader(conn)
		n := 1 + int(rng.ExpFloat64()*float64(o.RequestsPerSession-1))
		ok := true
		for j := 0; j < n && ok && ctx.Err() == nil; j++ {
			if j > 0 {
				if !think() {
					break
				}
				start = time.Now()
				conn.SetDeadline(start.Add(o.timeout()))
			}
			status, err := roundTrip(conn, br, req)
			switch {
			case err != nil && ctx.Err() != nil:
				ok = false
			case err != nil && isTimeout(err):
				c.count(&c.timeouts)
				tc = newTLS()
				ok = false
			case err != nil:
				c.count(&c.refused)
				ok = false
			case status == http.StatusOK:
				if c.measuring.Load() {
					c.replies.Add(1)
					c.latency(time.Since(start))
				}
			default:
				c.count(&c.refused)
				ok = false
				think()
			}
		}
		conn.Close()
		if ok && !think() {
			return
		}
	}
}

func (c *counters) count(v *atomic.Int64) {
	if c.measuring.Load() {
		v.Add(1)
	}
}

func roundTrip(conn net.Conn, br *bufio.Reader, req []byte) (int, error) {
	if _, err := conn.Write(req); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
