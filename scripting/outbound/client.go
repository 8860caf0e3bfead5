package outbound

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hostd/hostd/scripting"
)

// Defaults of a zero Options.
const (
	DefaultMaxBody      = 1 << 20
	DefaultMaxRedirects = 5
	// DefaultTimeout bounds a request when neither the hook nor the run
	// gives an earlier deadline.
	DefaultTimeout = 30 * time.Second
)

// Options configure a Client. The zero value allows nothing.
type Options struct {
	// Allow are the vhost's outbound entries (see CheckEntry).
	Allow []string
	// Protected are the addresses of hostd's own stores (session Redis
	// and memcached servers): reachable only through an address entry
	// naming exactly that address.
	Protected []netip.Addr
	// StoresClosed refuses the Protected addresses whatever the entries
	// say: for allowlists the tenant writes (untrusted vhost files).
	StoresClosed bool
	// MaxBody bounds a response body (default DefaultMaxBody).
	MaxBody int64
	// MaxRedirects bounds the redirects followed (default
	// DefaultMaxRedirects; negative: none).
	MaxRedirects int
	// Resolver resolves host names (nil: the system's); tests point it
	// at a DNS server of their own.
	Resolver *net.Resolver
	// RootCAs verify HTTPS servers (nil: the system roots).
	RootCAs *x509.CertPool
}

// Stats are a Client's counters, for /metrics.
type Stats struct {
	Requests  atomic.Uint64 // requests made (redirects not counted)
	Refused   atomic.Uint64 // requests, redirects or connections the allowlist refused
	Errors    atomic.Uint64 // requests that failed otherwise (network, TLS, timeout, size)
	BytesRecv atomic.Uint64 // response body bytes returned to hooks
}

// Client is one vhost's outbound HTTP client, with its own connection
// pool. It implements scripting.HTTPClient and is safe for concurrent use.
type Client struct {
	policy  *Policy
	maxBody int64
	hc      *http.Client
	tr      *http.Transport
	Stats   Stats
}

var _ scripting.HTTPClient = (*Client)(nil)

// New returns a Client for opts; an invalid allowlist entry is an error.
func New(opts Options) (*Client, error) {
	pol, err := NewPolicy(opts.Allow, opts.Protected)
	if err != nil {
		return nil, err
	}
	pol.storesClosed = opts.StoresClosed
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.MaxRedirects == 0 {
		opts.MaxRedirects = DefaultMaxRedirects
	}
	c := &Client{policy: pol, maxBody: opts.MaxBody}
	d := &net.Dialer{
		Timeout:  10 * time.Second,
		Resolver: opts.Resolver,
		// Control sees every address the dialer tries, after resolution:
		// the last word on where a connection goes.
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !pol.AllowAddr(ap.Addr()) {
				c.Stats.Refused.Add(1)
				return fmt.Errorf("connect to %s: %w", address, ErrRefused)
			}
			return nil
		},
	}
	c.tr = &http.Transport{
		Proxy:                  nil, // never a proxy from the environment
		DialContext:            d.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConns:           32,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        60 * time.Second,
		ResponseHeaderTimeout:  DefaultTimeout,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
	maxRedir := opts.MaxRedirects
	c.hc = &http.Client{
		Transport: c.tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if maxRedir < 0 || len(via) > maxRedir {
				return fmt.Errorf("stopped after %d redirects", len(via)-1)
			}
			if err := c.checkURL(req.URL); err != nil {
				return fmt.Errorf("redirect: %w", err)
			}
			return nil
		},
	}
	return c, nil
}

// Close closes the idle connections; requests in progress finish.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// checkURL refuses a URL that is not http(s) or whose host the allowlist
// does not name.
func (c *Client) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	if u.Hostname() == "" || !c.policy.AllowHost(u.Hostname()) {
		c.Stats.Refused.Add(1)
		return fmt.Errorf("host %q is not in the site's outbound list: %w", u.Hostname(), ErrRefused)
	}
	return nil
}

// ErrTooLarge is the error of a response whose body exceeds the limit.
var ErrTooLarge = errors.New("outbound: response body too large")

// Do makes the request within ctx's deadline (which the hook engine bounds
// by the run's deadline) and returns the response with its whole body. A
// destination the allowlist does not allow fails with ErrRefused; a body
// over the limit with ErrTooLarge.
func (c *Client) Do(ctx context.Context, r *scripting.HTTPRequest) (*scripting.HTTPResponse, error) {
	c.Stats.Requests.Add(1)
	resp, err := c.do(ctx, r)
	if err != nil && !errors.Is(err, ErrRefused) {
		c.Stats.Errors.Add(1)
	}
	return resp, err
}

func (c *Client) do(ctx context.Context, r *scripting.HTTPRequest) (*scripting.HTTPResponse, error) {
	u, err := url.Parse(r.URL)
	if err != nil {
		return nil, fmt.Errorf("invalid url: %w", err)
	}
	if u.User != nil {
		return nil, fmt.Errorf("credentials in the url are not supported (use an Authorization header)")
	}
	if err := c.checkURL(u); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	for k, vs := range r.Header {
		if http.CanonicalHeaderKey(k) == "Host" {
			if len(vs) > 0 {
				req.Host = vs[0]
			}
			continue
		}
		req.Header[http.CanonicalHeaderKey(k)] = append(req.Header[http.CanonicalHeaderKey(k)], vs...)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "hostd")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, timeoutError(ctx, err)
	}
	defer resp.Body.Close()
	max := c.maxBody
	if r.MaxBody > 0 && r.MaxBody < max {
		max = r.MaxBody
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, timeoutError(ctx, fmt.Errorf("read response body: %w", err))
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w (more than %d bytes)", ErrTooLarge, max)
	}
	c.Stats.BytesRecv.Add(uint64(len(b)))
	return &scripting.HTTPResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// ErrTimeout is the error of a request that ran out of time: its timeout
// or the run's deadline passed while it dialled, shook hands, waited for
// the answer or read the body.
var ErrTimeout = errors.New("outbound: request timed out (deadline exceeded)")

// timeoutError gives err one message whichever step the deadline stopped:
// a dial reports "i/o timeout", the transport "context deadline exceeded"
// or "Client.Timeout exceeded", so a hook matches on one string.
func timeoutError(ctx context.Context, err error) error {
	var ne net.Error
	if ctx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}
