package admission

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostd/hostd/tenant"
)

// ErrShed is what the TLS stack reads from a connection that admission
// control refused.
var ErrShed = errors.New("admission: connection shed by admission control")

// defaultHandshakeWait is server.handshake_wait for a Config not made by
// tenant.Load: how long a new full handshake may wait for a slot before
// it is shed, below any client's patience.
const defaultHandshakeWait = 2 * time.Second

// Stats are the counters admission control keeps; the server reports
// them. Fields are updated atomically.
type Stats struct {
	// Shed counts the connections refused before their handshake.
	Shed atomic.Uint64
	// RefusedPerIP counts the connections closed at accept by
	// max_conns_per_ip (also counted in Shed).
	RefusedPerIP atomic.Uint64
}

// Controller is the overload protection in front of the TLS handshake
// (docs/overload.md). It bounds the full handshakes in progress and their
// rate, and the connections per client IP. Resumption attempts (a
// ClientHello carrying a session ticket or a TLS 1.3 pre-shared key) are
// not bounded: they are cheap and finish work already started. Refused
// connections are closed before any cryptography and counted in
// Stats.Shed. It is safe for concurrent use.
type Controller struct {
	slots    *slotPool     // full handshakes in progress; nil = unlimited
	bucket   *tokenBucket  // new full handshakes per second; nil = unlimited
	maxPerIP int           // <= 0: unlimited
	wait     time.Duration // for a handshake slot
	stats    *Stats
	logger   *slog.Logger

	mu    sync.Mutex
	perIP map[netip.Addr]int

	lastLog   atomic.Int64 // unix nanoseconds of the last shed log line
	unlogged  atomic.Uint64
	lastCause atomic.Value // string
}

// New returns the admission control of the [server] settings s, counting
// in stats.
func New(s *tenant.Server, stats *Stats, logger *slog.Logger) *Controller {
	a := &Controller{maxPerIP: s.MaxConnsPerIP, wait: s.HandshakeWait.Std(), stats: stats, logger: logger, perIP: make(map[netip.Addr]int)}
	if a.wait <= 0 {
		a.wait = defaultHandshakeWait
	}
	if s.MaxHandshakes > 0 {
		a.slots = &slotPool{free: s.MaxHandshakes, size: s.MaxHandshakes}
	}
	if s.AcceptRate > 0 {
		r := float64(s.AcceptRate * runtime.GOMAXPROCS(0))
		a.bucket = newTokenBucket(r, r, time.Now())
	}
	return a
}

// Wrap returns ln with admission control on its connections. Wrap the
// listener the TLS stack reads from directly, so that CertificateHook finds
// the connection as the ClientHello's.
func (a *Controller) Wrap(ln net.Listener) net.Listener {
	return &admissionListener{Listener: ln, a: a}
}

// shed counts a refused connection and logs at most one line a second.
func (a *Controller) shed(cause string) {
	a.stats.Shed.Add(1)
	a.unlogged.Add(1)
	a.lastCause.Store(cause)
	now := time.Now().UnixNano()
	last := a.lastLog.Load()
	if now-last < int64(time.Second) || !a.lastLog.CompareAndSwap(last, now) {
		return
	}
	a.logger.Warn("overload: shedding new connections", "shed", a.unlogged.Swap(0), "cause", cause,
		"shed_total", a.stats.Shed.Load())
}

// openConn counts a connection of ip and reports whether it is within
// max_conns_per_ip.
func (a *Controller) openConn(ip netip.Addr) bool {
	if a.maxPerIP <= 0 {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.perIP[ip] >= a.maxPerIP {
		return false
	}
	a.perIP[ip]++
	return true
}

func (a *Controller) closeConn(ip netip.Addr) {
	if a.maxPerIP <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.perIP[ip]--; a.perIP[ip] <= 0 {
		delete(a.perIP, ip)
	}
}

// acquireFull admits one new full handshake: a token of the accept rate
// and a handshake slot, waiting at most a.wait for the slot. It returns
// the cause when the handshake must be shed. waited reports whether it
// had to queue (the client may have given up meanwhile).
func (a *Controller) acquireFull(ctx context.Context) (ok, waited bool, cause string) {
	if a.bucket != nil && !a.bucket.take(time.Now()) {
		return false, false, "accept_rate"
	}
	if a.slots == nil {
		return true, false, ""
	}
	ok, waited = a.slots.acquire(ctx, a.wait)
	if !ok {
		return false, true, "max_handshakes"
	}
	return true, waited, ""
}

func (a *Controller) releaseFull() {
	if a.slots != nil {
		a.slots.release()
	}
}

// slotPool is a counting semaphore whose waiters are served newest first:
// under overload the oldest waiters are the clients most likely to have
// given up, so the freshest get the slots and the oldest time out and are
// shed. It is safe for concurrent use.
type slotPool struct {
	mu      sync.Mutex
	size    int
	free    int
	waiters []chan struct{} // a stack
}

// acquire takes a slot, waiting at most wait; waited reports whether it
// had to queue.
func (p *slotPool) acquire(ctx context.Context, wait time.Duration) (ok, waited bool) {
	p.mu.Lock()
	if p.free > 0 {
		p.free--
		p.mu.Unlock()
		return true, false
	}
	ch := make(chan struct{}, 1)
	p.waiters = append(p.waiters, ch)
	p.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ch:
		return true, true
	case <-t.C:
	case <-ctx.Done():
	}
	p.mu.Lock()
	for i, w := range p.waiters {
		if w == ch {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			p.mu.Unlock()
			return false, true
		}
	}
	p.mu.Unlock()
	<-ch // release handed us the slot as we gave up
	return true, true
}

// release returns a slot, handing it to the newest waiter if any.
func (p *slotPool) release() {
	p.mu.Lock()
	if n := len(p.waiters); n > 0 {
		ch := p.waiters[n-1]
		p.waiters = p.waiters[:n-1]
		p.mu.Unlock()
		ch <- struct{}{}
		return
	}
	p.free++
	p.mu.Unlock()
}

// inUse returns the slots taken.
func (p *slotPool) inUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.size - p.free
}

// CertificateHook runs when the TLS stack picks a certificate (the
// server's GetCertificate calls it first). In TLS 1.3
// that happens only for full handshakes, so a connection that claimed
// resumption but whose ticket did not decrypt gets its handshake slot
// here (or is shed), and cannot bypass the bound with fake tickets.
func (a *Controller) CertificateHook(hello *tls.ClientHelloInfo) error {
	c, ok := hello.Conn.(*admitConn)
	if !ok || !c.claimedResume || !supportsTLS13(hello) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != stateAdmitted {
		return nil
	}
	if ok, _, cause := a.acquireFull(hello.Context()); !ok {
		a.shed(cause)
		c.state = stateShed
		return ErrShed
	}
	c.state = stateHolding
	return nil
}

func supportsTLS13(hello *tls.ClientHelloInfo) bool {
	for _, v := range hello.SupportedVersions {
		if v == tls.VersionTLS13 {
			return true
		}
	}
	return false
}

// admissionListener applies admission control to accepted connections.
// The per-IP limit is checked at accept; the handshake limits on the
// connection's first read, which sees the ClientHello (the accept loop
// never reads, so a slow client cannot stall it).
type admissionListener struct {
	net.Listener
	a *Controller
}

func (l *admissionListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		var ip netip.Addr
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
			ip = ClientKey(ap.Addr()) // an IPv6 client counts by its /64
		}
		if !l.a.openConn(ip) {
			c.Close()
			l.a.stats.RefusedPerIP.Add(1)
			l.a.shed("max_conns_per_ip")
			continue
		}
		return &admitConn{Conn: c, a: l.a, ip: ip}, nil
	}
}

// ClientKey is the key per-client limits count by: the IPv4 address, or
// the /64 prefix of an IPv6 address (one subscriber's usual allocation,
// so that rotating through its addresses gains nothing).
func ClientKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, err := a.Prefix(64)
		if err == nil {
			return p.Addr()
		}
	}
	return a
}

// Connection states of admitConn.
const (
	stateNew      = iota // nothing read yet
	stateHolding         // a full handshake holding a slot
	stateAdmitted        // past admission, no slot held
	stateShed            // refused
)

// admitConn is an accepted connection under admission control. Its first
// Read reads the first TLS record (the ClientHello) and decides; the
// record is then handed to the TLS stack unchanged. A full handshake holds
// its slot until the server has written its flight and reads again (the
// expensive part, signing and key exchange, is over) or the connection
// closes.
type admitConn struct {
	net.Conn
	a  *Controller
	ip netip.Addr

	mu            sync.Mutex
	state         int
	claimedResume bool
	wrote         bool
	hello         []byte // unread part of the first record
	closeOnce     sync.Once
}

func (c *admitConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case stateNew:
		if err := c.admit(); err != nil {
			return 0, err
		}
	case stateShed:
		return 0, ErrShed
	case stateHolding:
		if c.wrote && len(c.hello) == 0 {
			c.a.releaseFull()
			c.state = stateAdmitted
		}
	}
	if len(c.hello) > 0 {
		n := copy(p, c.hello)
		c.hello = c.hello[n:]
		return n, nil
	}
	c.mu.Unlock()
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	return n, err
}

// admit reads the first record and applies the handshake limits. It is
// called with c.mu held.
func (c *admitConn) admit() error {
	rec, err := readRecord(c.Conn)
	c.hello = rec
	if err != nil && len(rec) == 0 {
		c.state = stateAdmitted
		return err
	}
	if isResumption(rec) {
		c.claimedResume = true
		c.state = stateAdmitted
		return nil
	}
	ok, waited, cause := c.a.acquireFull(context.Background())
	if ok && waited && ClientGone(c.Conn) {
		// The client gave up while queued: no handshake for nobody.
		c.a.releaseFull()
		ok, cause = false, "client gone"
	}
	if !ok {
		c.state = stateShed
		c.a.shed(cause)
		c.Conn.Close()
		return ErrShed
	}
	c.state = stateHolding
	return nil
}

func (c *admitConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.wrote = true
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *admitConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		c.mu.Lock()
		if c.state == stateHolding {
			c.a.releaseFull()
		}
		c.state = stateShed
		c.mu.Unlock()
		c.a.closeConn(c.ip)
	})
	return err
}

// readRecord reads one TLS record (header and body) from r. On a short
// read it returns what it got with the error.
func readRecord(r io.Reader) ([]byte, error) {
	hdr := make([]byte, 5, 5+512)
	if n, err := io.ReadFull(r, hdr); err != nil {
		return hdr[:n], err
	}
	n := int(hdr[3])<<8 | int(hdr[4])
	if hdr[0] != 22 || n > 1<<14+2048 {
		return hdr, nil // not a handshake record: the TLS stack will reject it
	}
	rec := append(hdr, make([]byte, n)...)
	m, err := io.ReadFull(r, rec[5:])
	return rec[:5+m], err
}

// isResumption reports whether a TLS record holding a ClientHello offers
// to resume a session: a non-empty session_ticket extension (TLS 1.2) or
// a pre_shared_key extension (TLS 1.3). A malformed or truncated hello is
// not a resumption.
func isResumption(rec []byte) bool {
	if len(rec) < 5+4 || rec[0] != 22 || rec[5] != 1 {
		return false
	}
	b := rec[5+4:] // ClientHello body
	skip := func(n int) bool {
		if n > len(b) {
			return false
		}
		b = b[n:]
		return true
	}
	vec := func(lenBytes int) bool {
		if len(b) < lenBytes {
			return false
		}
		n := 0
		for i := range lenBytes {
			n = n<<8 | int(b[i])
		}
		return skip(lenBytes + n)
	}
	// version, random, session_id, cipher_suites, compression_methods
	if !skip(2+32) || !vec(1) || !vec(2) || !vec(1) || len(b) < 2 {
		return false
	}
	b = b[2:] // the extensions' length: the record may be truncated, so walk what is there
	for len(b) >= 4 {
		typ, n := int(b[0])<<8|int(b[1]), int(b[2])<<8|int(b[3])
		switch {
		case typ == 41: // pre_shared_key
			return true
		case typ == 35 && n > 0: // session_ticket with a ticket
			return true
		}
		if !skip(4 + n) {
			return false
		}
	}
	return false
}

// tokenBucket is a rate limiter: rate tokens a second, at most burst
// saved. It is safe for concurrent use.
type tokenBucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newTokenBucket(rate, burst float64, now time.Time) *tokenBucket {
	return &tokenBucket{rate: rate, burst: burst, tokens: burst, last: now}
}

// take removes one token at now, reporting whether there was one.
func (b *tokenBucket) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.burst, b.tokens+d.Seconds()*b.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
