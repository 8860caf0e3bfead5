package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
)

// SocketName is the admin socket's file name under state_dir.
const SocketName = "admin.sock"

// SocketPath returns the admin socket of a server whose absolute state
// directory is stateDir.
func SocketPath(stateDir string) string { return filepath.Join(stateDir, SocketName) }

// Backend is what the admin socket and listener ask of a running server;
// *host.Server implements it.
type Backend interface {
	// Status returns the server's counters now.
	Status() Status
	// Reload applies the configuration files again (host.Server.Reload).
	Reload(ctx context.Context) (ReloadResult, error)
	// ReopenLogs reopens every access and error log.
	ReopenLogs() error
	// StreamTrace writes a line per request of vhost ("" = all) to c
	// until the client hangs up.
	StreamTrace(c net.Conn, vhost string)
}

// ListenSocket binds the admin socket of stateDir (SocketPath, mode 0600),
// making the directory (0700). A socket another server answers on is an
// error; a stale one is replaced.
func ListenSocket(stateDir string) (net.Listener, error) {
	path := SocketPath(stateDir)
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, fmt.Errorf("admin socket %s: another hostd is serving this state_dir", path)
	}
	os.Remove(path) // a stale socket of a server that is gone
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	return ln, nil
}

// request is one request line on the admin socket.
type request struct {
	Op    string `json:"op"`              // status | reload | reopen-logs | trace
	VHost string `json:"vhost,omitempty"` // trace: only this vhost
}

// reply is the answer to status and reload.
type reply struct {
	Error  string        `json:"error,omitempty"`
	Status *Status       `json:"status,omitempty"`
	Reload *ReloadResult `json:"reload,omitempty"`
}

// Serve answers the admin socket's connections from b until ln is
// closed: one JSON request line each (Client writes them).
func Serve(ln net.Listener, b Backend) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go serveConn(c, b)
	}
}

func serveConn(c net.Conn, b Backend) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(io.LimitReader(c, 4096))
	line, err := br.ReadBytes('\n')
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	var req request
	var rep reply
	if err := json.Unmarshal(line, &req); err != nil {
		rep.Error = "bad request: " + err.Error()
		json.NewEncoder(c).Encode(rep)
		return
	}
	switch req.Op {
	case "status":
		st := b.Status()
		rep.Status = &st
	case "reload":
		res, err := b.Reload(context.Background())
		if err != nil {
			rep.Error = err.Error()
		} else {
			rep.Reload = &res
		}
	case "reopen-logs":
		if err := b.ReopenLogs(); err != nil {
			rep.Error = err.Error()
		}
	case "trace":
		b.StreamTrace(c, req.VHost)
		return
	default:
		rep.Error = fmt.Sprintf("unknown op %q (want status, reload, reopen-logs or trace)", req.Op)
	}
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	json.NewEncoder(c).Encode(rep)
}
