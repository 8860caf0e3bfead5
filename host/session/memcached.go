package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// Memcached is a Store on memcached servers, with an optional backup
// group written too (as memcached-session-manager does): a session
// survives the loss of one primary server. Load asks the primaries and
// the backup only when a primary cannot be reached (a miss is final);
// Save succeeds when either group took the whole value. It is
// safe for concurrent use and starts no goroutines.
type Memcached struct {
	primary, backup *memcache.Client
	name            string
}

// NewMemcached returns a store on servers ("host:port"), writing to backup
// too when it is not empty. timeout bounds each network operation (0:
// DefaultTimeout).
func NewMemcached(servers, backup []string, timeout time.Duration) (*Memcached, error) {
	if len(servers) == 0 {
		return nil, errors.New("memcached: no servers")
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	mk := func(addrs []string) (*memcache.Client, error) {
		var sl memcache.ServerList
		if err := sl.SetServers(addrs...); err != nil {
			return nil, fmt.Errorf("memcached servers %v: %w", addrs, err)
		}
		c := memcache.NewFromSelector(&sl)
		c.Timeout, c.MaxIdleConns = timeout, 16
		return c, nil
	}
	s := &Memcached{name: "memcached " + strings.Join(servers, ",")}
	var err error
	if s.primary, err = mk(servers); err != nil {
		return nil, err
	}
	if len(backup) > 0 {
		if s.backup, err = mk(backup); err != nil {
			return nil, err
		}
		s.name += " (backup " + strings.Join(backup, ",") + ")"
	}
	return s, nil
}

// Load uses gat (get and touch), so reading and extending the expiry is
// one round trip.
func (s *Memcached) Load(ctx context.Context, key string, ttl time.Duration) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	it, err := s.primary.GetAndTouch(key, ttlSeconds(ttl))
	if err == nil {
		return it.Value, nil
	}
	// A miss on a reachable primary is final: falling back to the backup
	// then could bring back a session the primary saw destroyed.
	if s.backup == nil || ctx.Err() != nil || errors.Is(err, memcache.ErrCacheMiss) {
		return nil, notFound(err)
	}
	it, berr := s.backup.GetAndTouch(key, ttlSeconds(ttl))
	switch {
	case berr == nil:
		return it.Value, nil
	case errors.Is(berr, memcache.ErrCacheMiss):
		return nil, ErrNotFound
	}
	return nil, notFound(err)
}

func notFound(err error) error {
	if errors.Is(err, memcache.ErrCacheMiss) {
		return ErrNotFound
	}
	return err
}

func (s *Memcached) Save(ctx context.Context, key string, data []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	it := &memcache.Item{Key: key, Value: data, Expiration: ttlSeconds(ttl)}
	err := s.primary.Set(it)
	if s.backup == nil {
		return err
	}
	if berr := s.backup.Set(it); berr != nil && err != nil {
		return errors.Join(err, berr)
	}
	return nil
}

func (s *Memcached) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.primary.Delete(key)
	if errors.Is(err, memcache.ErrCacheMiss) {
		err = nil
	}
	if s.backup == nil {
		return err
	}
	berr := s.backup.Delete(key)
	if errors.Is(berr, memcache.ErrCacheMiss) {
		berr = nil
	}
	if err != nil && berr != nil {
		return errors.Join(err, berr)
	}
	return nil
}

func (s *Memcached) String() string { return s.name }
func (s *Memcached) Close() error {
	err := s.primary.Close()
	if s.backup != nil {
		err = errors.Join(err, s.backup.Close())
	}
	return err
}

// SetAuth makes every connection to the servers (and backup) authenticate
// first with memcached's ASCII authentication (memcached -Y AUTH_FILE,
// 1.5.15 or later): a "set" whose data is "USER PASSWORD", answered
// STORED. A connection that is refused is closed and the store call
// fails. Call it before the first store call.
func (s *Memcached) SetAuth(user, password string) {
	for _, c := range []*memcache.Client{s.primary, s.backup} {
		if c == nil {
			continue
		}
		timeout := c.Timeout
		c.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: timeout}
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if err := memcachedAuth(conn, timeout, user, password); err != nil {
				conn.Close()
				return nil, fmt.Errorf("memcached %s: %w", addr, err)
			}
			return conn, nil
		}
	}
	s.name += " (authenticated)"
}

func memcachedAuth(conn net.Conn, timeout time.Duration, user, password string) error {
	conn.SetDeadline(time.Now().Add(timeout))
	defer conn.SetDeadline(time.Time{})
	cred := user + " " + password
	if _, err := fmt.Fprintf(conn, "set auth 0 0 %d\r\n%s\r\n", len(cred), cred); err != nil {
		return fmt.Errorf("authentication: %w", err)
	}
	line, err := bufio.NewReader(io.LimitReader(conn, 256)).ReadString('\n')
	if err != nil {
		return fmt.Errorf("authentication: %w", err)
	}
	if strings.TrimSpace(line) != "STORED" {
		return fmt.Errorf("authentication refused: %q", strings.TrimSpace(line))
	}
	return nil
}
