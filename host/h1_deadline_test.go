package host_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hostd/hostd/host/hosttest"
)

// TestH1DeadlinesAfterKeepAlive: the read timeouts of a keep-alive
// connection's later requests hold after a request without a body whose
// head came in whole (the HTTP/1.1 loop leaves the read deadline alone for
// those): an idle client is closed after idle_timeout, a half-sent second
// head after read_header_timeout, and a body that never comes after
// read_timeout.
func TestH1DeadlinesAfterKeepAlive(t *testing.T) {
	files := twoTenants()
	files["hostd.toml"] = hosttest.MainConfig + "read_header_timeout = \"300ms\"\nread_timeout = \"600ms\"\nidle_timeout = \"500ms\"\n"
	s := hosttest.Start(t, files)
	for _, tc := range []struct {
		name, second string
	}{
		{"idle", ""},
		{"half-sent head", "GET / HTTP/1.1\r\nHost: alice.example\r\n"},
		{"missing body", "POST / HTTP/1.1\r\nHost: alice.example\r\nContent-Length: 10\r\n\r\nab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := tls.Dial("tcp", s.HTTPSAddr(), &tls.Config{ServerName: "alice.example", InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			get := func() *http.Response {
				t.Helper()
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp
			}
			// Two requests without a body, the second pipelined behind the first.
			fmt.Fprint(conn, "GET / HTTP/1.1\r\nHost: alice.example\r\n\r\nGET / HTTP/1.1\r\nHost: alice.example\r\n\r\n")
			for range 2 {
				if r := get(); r.StatusCode != 200 {
					t.Fatalf("status %d", r.StatusCode)
				}
			}
			fmt.Fprint(conn, tc.second)
			if tc.name == "missing body" {
				// Answered (the static handler does not read the body), then
				// cut while the server waits for the rest of the body.
				get()
			}
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			start := time.Now()
			_, err = io.ReadAll(br)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("server kept the connection open for %v", time.Since(start))
			}
		})
	}
}
