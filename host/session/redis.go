package session

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Redis is a Store on a Redis server, a Sentinel-managed master or a
// Cluster. It is safe for concurrent use; go-redis keeps a connection
// pool and reconnects by itself when the server returns.
type Redis struct {
	c    redis.UniversalClient
	name string
}

// NewRedis connects lazily to the Redis named by rawURL:
//
//   - redis://[user:pass@]host:port[/db] (rediss:// for TLS): one server;
//   - redis://host:26379[/db]?master_name=NAME[&addr=host2:26379...]: the
//     master that these Sentinels name;
//   - redis+cluster://host:port[?addr=host2:port...] (rediss+cluster://):
//     a Cluster.
//
// timeout bounds dialling, reading and writing (0: DefaultTimeout).
func NewRedis(rawURL string, timeout time.Duration) (*Redis, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	var c redis.UniversalClient
	name := "redis " + u.Host
	switch {
	case strings.HasSuffix(u.Scheme, "+cluster"):
		u.Scheme = strings.TrimSuffix(u.Scheme, "+cluster")
		o, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("redis cluster url: %w", err)
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = timeout, timeout, timeout
		o.ContextTimeoutEnabled, o.DisableIdentity, o.MaxRetries = true, true, 1
		o.DialerRetries, o.MaintNotificationsConfig = 1, noMaint()
		c, name = redis.NewClusterClient(o), "redis cluster "+strings.Join(o.Addrs, ",")
	case u.Query().Has("master_name"):
		o, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("redis sentinel url: %w", err)
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = timeout, timeout, timeout
		o.ContextTimeoutEnabled, o.DisableIdentity, o.MaxRetries = true, true, 1
		o.DialerRetries = 1
		c, name = redis.NewFailoverClient(o), "redis sentinel "+o.MasterName+"@"+strings.Join(o.SentinelAddrs, ",")
	default:
		o, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("redis url: %w", err)
		}
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = timeout, timeout, timeout
		o.ContextTimeoutEnabled, o.DisableIdentity, o.MaxRetries = true, true, 1
		o.DialerRetries, o.MaintNotificationsConfig = 1, noMaint()
		c, name = redis.NewClient(o), "redis "+o.Addr
	}
	return &Redis{c: c, name: name}, nil
}

// Load uses GETEX, so reading and extending the expiry is one round trip
// (Redis 6.2 or later).
func (s *Redis) Load(ctx context.Context, key string, ttl time.Duration) ([]byte, error) {
	b, err := s.c.GetEx(ctx, key, ttl).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	return b, err
}

func (s *Redis) Save(ctx context.Context, key string, data []byte, ttl time.Duration) error {
	return s.c.Set(ctx, key, data, ttl).Err()
}

func (s *Redis) Delete(ctx context.Context, key string) error {
	return s.c.Del(ctx, key).Err()
}

func (s *Redis) String() string { return s.name }
func (s *Redis) Close() error   { return s.c.Close() }

// noMaint turns off maintenance notifications: they need RESP3 push
// support and cost a command per connection; sessions do not need them.
func noMaint() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}
