package host

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// hostd's own TLS accept loop. Every connection of the HTTPS listener is
// accepted here (behind admission control, capacity.go and admission.go),
// its handshake done with the server's tls.Config (SNI, tickets, profiles
// as before), and then ALPN picks the HTTP stack: "h2" (and the ACME
// TLS-ALPN-01 protocol) go to net/http's HTTP/2 server through a
// listener of handed-over connections; HTTP/1.x ("http/1.1" or no ALPN)
// goes to hostd's own keep-alive loop (h1.go). Both call the same
// handler, serveHTTPS: one request pipeline, two transports.

// connListener is a net.Listener whose connections are handed to it (the
// HTTP/2 connections after their handshake), for http.Server.Serve.
type connListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newConnListener(addr net.Addr) *connListener {
	return &connListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// hand gives c to the server serving l, or closes it when l is closed.
func (l *connListener) hand(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }

// tlsHandshakeTimeout is net/http's: the shortest of the read header,
// read and write timeouts that are set.
func (s *Server) tlsHandshakeTimeout() time.Duration {
	var d time.Duration
	for _, t := range []time.Duration{s.cfg.Server.ReadHeaderTimeout.Std(), s.cfg.Server.ReadTimeout.Std(), s.cfg.Server.WriteTimeout.Std()} {
		if t > 0 && (d == 0 || t < d) {
			d = t
		}
	}
	return d
}

// acceptTLS accepts connections on ln until it is closed, retrying
// temporary errors with a growing pause as net/http does.
func (s *Server) acceptTLS(ln net.Listener) error {
	var pause time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.h1.closing.Load() || errors.Is(err, net.ErrClosed) {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errShed) || isTemporary(err) {
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				s.logger.Debug("accept error, retrying", "err", err, "pause", pause)
				time.Sleep(pause)
				continue
			}
			return err
		}
		pause = 0
		go s.serveTLSConn(c)
	}
}

// isTemporary reports the accept errors net/http retries (EMFILE and the
// like report Temporary).
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// serveTLSConn does the handshake of c under the handshake timeout, then
// hands it to HTTP/2 or serves it as HTTP/1.x.
func (s *Server) serveTLSConn(c net.Conn) {
	tc := tls.Server(c, s.tlsConfig)
	if d := s.tlsHandshakeTimeout(); d > 0 {
		dl := time.Now().Add(d)
		c.SetReadDeadline(dl)
		c.SetWriteDeadline(dl)
	}
	if err := tc.HandshakeContext(context.Background()); err != nil {
		reason := err.Error()
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && recordLooksLikeHTTP(re.RecordHeader) {
			io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
			reason = "client sent an HTTP request to an HTTPS server"
		}
		// The same line net/http logs: handshakeCounter counts it (metrics.go).
		s.httpsSrv.ErrorLog.Printf("http: TLS handshake error from %s: %v", c.RemoteAddr(), reason)
		tc.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	c.SetWriteDeadline(time.Time{})
	switch tc.ConnectionState().NegotiatedProtocol {
	case "", "http/1.1":
		s.serveH1(tc)
	default: // "h2", acmeALPN: net/http (it sees the handshake done)
		s.h2ln.hand(tc)
	}
}

// recordLooksLikeHTTP is net/http's test of a plain HTTP request sent to
// the TLS port.
func recordLooksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}
