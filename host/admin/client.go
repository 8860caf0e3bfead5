package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// Client talks to a running server's admin socket.
type Client struct {
	// Socket is the admin socket path (SocketPath).
	Socket string
}

// ErrNoServer means no server answers on the admin socket: none is
// running with that state_dir.
var ErrNoServer = errors.New("no server is running")

// dial connects to the admin socket; a socket that is missing or that
// nobody listens on is ErrNoServer, named with its path.
func (a Client) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", a.Socket)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w on %s", ErrNoServer, a.Socket)
		}
		return nil, fmt.Errorf("admin socket %s: %w", a.Socket, err)
	}
	return c, nil
}

func (a Client) call(ctx context.Context, req request) (*reply, error) {
	c, err := a.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	var rep reply
	if err := json.NewDecoder(c).Decode(&rep); err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	if rep.Error != "" {
		return &rep, errors.New(rep.Error)
	}
	return &rep, nil
}

// Status fetches the server's Status.
func (a Client) Status(ctx context.Context) (*Status, error) {
	r, err := a.call(ctx, request{Op: "status"})
	if err != nil {
		return nil, err
	}
	return r.Status, nil
}

// Reload asks the server to reload; the error carries the server's
// message (file:line entries, one per line) when it refused.
func (a Client) Reload(ctx context.Context) (*ReloadResult, error) {
	r, err := a.call(ctx, request{Op: "reload"})
	if err != nil {
		return nil, err
	}
	return r.Reload, nil
}

// ReopenLogs asks the server to reopen its access and error logs (after
// logrotate moved them).
func (a Client) ReopenLogs(ctx context.Context) error {
	_, err := a.call(ctx, request{Op: "reopen-logs"})
	return err
}

// Trace copies trace lines (one per request, vhost "" = all) to w until
// ctx is done or the server goes away.
func (a Client) Trace(ctx context.Context, vhost string, w io.Writer) error {
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := json.NewEncoder(c).Encode(request{Op: "trace", VHost: vhost}); err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	_, err = io.Copy(w, c)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
