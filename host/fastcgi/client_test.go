package fastcgi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/fcgi"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// listen returns a unix listener in a test directory and a Dial for it.
func listen(t *testing.T) (net.Listener, func(context.Context) (net.Conn, error)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var d net.Dialer
	return ln, func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "unix", path) }
}

// serveGo serves h with net/http/fcgi, the standard library's responder.
func serveGo(t *testing.T, h http.HandlerFunc) func(context.Context) (net.Conn, error) {
	ln, dial := listen(t)
	go fcgi.Serve(ln, h)
	return dial
}

func params(method, uri string, extra ...string) []string {
	return append([]string{"REQUEST_METHOD=" + method, "REQUEST_URI=" + uri, "SERVER_PROTOCOL=HTTP/1.1",
		"SCRIPT_NAME=" + uri, "HTTP_HOST=example", "REMOTE_ADDR=127.0.0.1", "REMOTE_PORT=1"}, extra...)
}

func do(t *testing.T, c *Client, req *Request) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Do(ctx, req)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(resp)
	if cerr := resp.Close(); err == nil {
		err = cerr
	}
	return string(b), err
}

func TestParamsAndKeepAlive(t *testing.T) {
	dial := serveGo(t, func(w http.ResponseWriter, r *http.Request) {
		env := fcgi.ProcessEnv(r)
		fmt.Fprintf(w, "%s %s %s long=%d", r.Method, r.URL.Path, r.Header.Get("X-Test"), len(env["LONG"]))
	})
	c := New(Config{Dial: dial})
	defer c.Close()
	long := strings.Repeat("x", 70000) // a pair longer than one record
	for i := range 5 {
		out, err := do(t, c, &Request{Params: params("GET", "/p", "HTTP_X_TEST=v"+fmt.Sprint(i), "LONG="+long)})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("GET /p v%d long=70000", i)
		if !strings.HasSuffix(out, want) {
			t.Fatalf("response %q, want it to end with %q", out, want)
		}
	}
	if st := c.Stats(); st.Dials != 1 || st.Requests != 5 || st.Idle != 1 || st.Busy != 0 {
		t.Fatalf("stats %+v: want 1 dial, 5 requests, 1 idle, 0 busy", st)
	}
}

func TestBodyStreaming(t *testing.T) {
	dial := serveGo(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	})
	c := New(Config{Dial: dial})
	defer c.Close()
	body := make([]byte, 300<<10)
	rand.Read(body)
	for range 2 {
		out, err := do(t, c, &Request{
			Params: params("POST", "/up", fmt.Sprintf("CONTENT_LENGTH=%d", len(body))),
			Body:   bytes.NewReader(body),
		})
		if err != nil {
			t.Fatal(err)
		}
		_, got, _ := strings.Cut(out, "\r\n\r\n")
		if got != string(body) {
			t.Fatalf("echoed %d bytes, want the %d sent", len(got), len(body))
		}
	}
	if st := c.Stats(); st.Dials != 1 {
		t.Fatalf("%d dials for two requests, want 1 (kept connection)", st.Dials)
	}
}

func TestMaxConns(t *testing.T) {
	var mu sync.Mutex
	inFlight, peak := 0, 0
	dial := serveGo(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		io.WriteString(w, "ok")
	})
	c := New(Config{Dial: dial, MaxConns: 2})
	defer c.Close()
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			if _, err := do(t, c, &Request{Params: params("GET", "/")}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if st := c.Stats(); st.Dials > 2 || peak > 2 {
		t.Fatalf("%d dials, %d requests at once: want at most MaxConns = 2", st.Dials, peak)
	}
}

// rawServer is a minimal responder written against the record layout: it
// answers every request with stderr, then stdout, then END_REQUEST, and
// closes the connection after each request when closeAfter is set.
func rawServer(t *testing.T, closeAfter bool, handle func(params map[string]string, stdin []byte) (stdout, stderr string)) func(context.Context) (net.Conn, error) {
	ln, dial := listen(t)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				for {
					p, stdin, err := readRequest(nc)
					if err != nil {
						return
					}
					out, errOut := handle(p, stdin)
					var b []byte
					b = appendRecords(b, typeStderr, []byte(errOut))
					b = appendRecords(b, typeStdout, []byte(out))
					b = appendEmpty(b, typeStdout)
					var end [headerLen + 8]byte
					putHeader(end[:], typeEndRequest, 8)
					b = append(b, end[:]...)
					if _, err := nc.Write(b); err != nil || closeAfter {
						return
					}
				}
			}()
		}
	}()
	return dial
}

func readRequest(r io.Reader) (map[string]string, []byte, error) {
	var ps, stdin []byte
	var h [headerLen]byte
	for {
		hd, err := readHeader(r, h[:])
		if err != nil {
			return nil, nil, err
		}
		b := make([]byte, int(hd.contentLength)+int(hd.paddingLength))
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, nil, err
		}
		b = b[:hd.contentLength]
		switch hd.typ {
		case typeParams:
			ps = append(ps, b...)
		case typeStdin:
			if len(b) == 0 {
				return decodeParams(ps), stdin, nil
			}
			stdin = append(stdin, b...)
		}
	}
}

func decodeParams(b []byte) map[string]string {
	m := map[string]string{}
	length := func() int {
		if b[0] < 128 {
			n := int(b[0])
			b = b[1:]
			return n
		}
		n := int(binary.BigEndian.Uint32(b) &^ (1 << 31))
		b = b[4:]
		return n
	}
	for len(b) > 0 {
		kl := length()
		vl := length()
		m[string(b[:kl])] = string(b[kl : kl+vl])
		b = b[kl+vl:]
	}
	return m
}

func TestStderrAndClosedKeptConnection(t *testing.T) {
	dial := rawServer(t, true, func(p map[string]string, _ []byte) (string, string) {
		return "Content-Type: text/plain\r\n\r\nhi " + p["REQUEST_URI"], "PHP message: oops\n"
	})
	c := New(Config{Dial: dial})
	defer c.Close()
	for i := range 3 {
		var stderr bytes.Buffer
		out, err := do(t, c, &Request{Params: params("GET", fmt.Sprint("/", i)), Stderr: func(p []byte) { stderr.Write(p) }})
		if err != nil {
			t.Fatalf("request %d: %v (a kept connection the server closed must be replaced)", i, err)
		}
		if !strings.HasSuffix(out, fmt.Sprint("hi /", i)) || stderr.String() != "PHP message: oops\n" {
			t.Fatalf("request %d: stdout %q, stderr %q", i, out, stderr.String())
		}
	}
	if st := c.Stats(); st.Dials != 3 {
		t.Fatalf("%d dials, want 3 (the server closes after each request)", st.Dials)
	}
}

func TestContextBoundsTheRequest(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	dial := rawServer(t, false, func(map[string]string, []byte) (string, string) {
		<-release
		return "", ""
	})
	c := New(Config{Dial: dial, MaxConns: 1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	resp, err := c.Do(ctx, &Request{Params: params("GET", "/slow")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp)
	resp.Close()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read error %v, want a timeout", err)
	}
	// The connection was dropped, and its slot freed.
	if st := c.Stats(); st.Busy != 0 || st.Idle != 0 {
		t.Fatalf("stats after a timed-out request %+v: want nothing busy or kept", st)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	c.slots <- struct{}{} // take the only slot: Do must wait and give up
	_, err = c.Do(ctx2, &Request{Params: params("GET", "/")})
	<-c.slots
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do without a free connection: %v, want the context's deadline", err)
	}
}

func TestCloseRefuses(t *testing.T) {
	dial := serveGo(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") })
	c := New(Config{Dial: dial})
	if _, err := do(t, c, &Request{Params: params("GET", "/")}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := do(t, c, &Request{Params: params("GET", "/")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close: %v, want ErrClosed", err)
	}
}

// TestOneShot: with OneShot every request has a connection of its own
// (FCGI_KEEP_CONN unset, closed after it), and a body-less request whose
// connection the application closes before answering (a worker killed
// with its master) is retried once; one with a body is not.
func TestOneShot(t *testing.T) {
	ln, dial := listen(t)
	var accepted atomic.Int64
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			n := accepted.Add(1)
			go func() {
				defer nc.Close()
				b := make([]byte, headerLen+8)
				if _, err := io.ReadFull(nc, b); err != nil {
					return
				}
				// BEGIN_REQUEST's body: role (2 bytes), then flags.
				if keep := b[headerLen+2] & 1; keep != 0 {
					t.Errorf("connection %d: FCGI_KEEP_CONN set", n)
				}
				if n%2 == 1 {
					return // drops the request unanswered
				}
				_, stdin, err := readRequest(nc) // after BEGIN_REQUEST
				if err != nil {
					return
				}
				var out []byte
				out = appendRecords(out, typeStdout, []byte("Content-Type: text/plain\r\n\r\nok "+string(stdin)))
				out = appendEmpty(out, typeStdout)
				var end [headerLen + 8]byte
				putHeader(end[:], typeEndRequest, 8)
				nc.Write(append(out, end[:]...))
			}()
		}
	}()
	c := New(Config{Dial: dial, OneShot: true})
	defer c.Close()
	out, err := do(t, c, &Request{Params: params("GET", "/")})
	if err != nil || !strings.HasSuffix(out, "ok ") {
		t.Fatalf("GET: %q, %v (its dropped connection must be retried)", out, err)
	}
	if _, err := do(t, c, &Request{Params: params("POST", "/"), Body: strings.NewReader("x")}); err == nil {
		t.Fatal("POST on a dropped connection: no error (a request with a body must not be sent twice)")
	}
	out, err = do(t, c, &Request{Params: params("GET", "/")})
	if err != nil || !strings.HasSuffix(out, "ok ") {
		t.Fatalf("second GET: %q, %v", out, err)
	}
	if st := c.Stats(); st.Dials != 4 || st.Idle != 0 {
		t.Fatalf("%d dials, %d idle; want 4 and none kept", st.Dials, st.Idle)
	}
}
