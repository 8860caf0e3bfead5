package admin_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/hostd/hostd/host/admin"
)

// backend is a Backend with fixed answers.
type backend struct{ reloadErr error }

func (backend) Status() admin.Status {
	return admin.Status{Version: "v-test", VHosts: map[string]admin.VHostStatus{"a.example": {Requests: 3}}}
}

func (b backend) Reload(context.Context) (admin.ReloadResult, error) {
	return admin.ReloadResult{Generation: 2, Kept: 1}, b.reloadErr
}

func (backend) ReopenLogs() error { return errors.New("reopen: no such log") }

func (backend) StreamTrace(c net.Conn, vhost string) {
	fmt.Fprintf(c, "# tracing %s\n", vhost)
}

// TestSocket: the client's calls reach the backend through the socket,
// 0600, and errors come back as the server's message.
func TestSocket(t *testing.T) {
	dir := t.TempDir()
	ln, err := admin.ListenSocket(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if fi, err := os.Stat(admin.SocketPath(dir)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v, want mode 0600", fi, err)
	}
	if _, err := admin.ListenSocket(dir); err == nil || !strings.Contains(err.Error(), "another hostd") {
		t.Errorf("second ListenSocket: %v, want another hostd", err)
	}
	go admin.Serve(ln, backend{})
	ctx := context.Background()
	c := admin.Client{Socket: admin.SocketPath(dir)}
	st, err := c.Status(ctx)
	if err != nil || st.Version != "v-test" || st.VHosts["a.example"].Requests != 3 {
		t.Errorf("Status: %+v %v", st, err)
	}
	res, err := c.Reload(ctx)
	if err != nil || res.Generation != 2 || !res.Partial() {
		t.Errorf("Reload: %+v %v", res, err)
	}
	if err := c.ReopenLogs(ctx); err == nil || err.Error() != "reopen: no such log" {
		t.Errorf("ReopenLogs: %v", err)
	}
	var out strings.Builder
	if err := c.Trace(ctx, "a.example", &out); err != nil || out.String() != "# tracing a.example\n" {
		t.Errorf("Trace: %q %v", out.String(), err)
	}
	raw, err := net.Dial("unix", admin.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	io.WriteString(raw, `{"op":"nope"}`+"\n")
	line, _ := bufio.NewReader(raw).ReadString('\n')
	if !strings.Contains(line, `unknown op \"nope\"`) {
		t.Errorf("unknown op: %q", line)
	}
	ln.Close()
	if _, err := (admin.Client{Socket: admin.SocketPath(dir)}).Status(ctx); !errors.Is(err, admin.ErrNoServer) {
		t.Errorf("after close: %v, want ErrNoServer", err)
	}
}

// TestHandler: the listener's routes answer from the backend.
func TestHandler(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "m 1\n") })
	h := admin.Handler(backend{}, metrics, nil)
	for _, tc := range []struct{ path, want string }{
		{"/metrics", "m 1"}, {"/status", `data-vhost="a.example"`}, {"/status.json", `"version": "v-test"`},
		{"/debug/pprof/", "goroutine"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("GET %s: %d %.200q, want %q", tc.path, rec.Code, rec.Body.String(), tc.want)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "/status" {
		t.Errorf("GET /: %d %q", rec.Code, rec.Header().Get("Location"))
	}
}
