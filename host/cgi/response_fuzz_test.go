package cgi

import (
	"bufio"
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzReadResponse feeds arbitrary script output to the CGI response
// parser. Whatever a script writes, the parser returns an error or a
// response whose status, headers and redirect keep its rules, and reads no
// further than the header block it accepts (the body stays for the
// client); WriteHeader then sends no hop-by-hop header.
func FuzzReadResponse(f *testing.F) {
	// The seeds are testdata/fuzz/FuzzReadResponse (go test runs them).
	f.Fuzz(func(t *testing.T, out []byte) {
		if len(out) > 2*maxHeaderBytes {
			return
		}
		br := bufio.NewReaderSize(bytes.NewReader(out), maxHeaderBytes)
		resp, err := ReadResponse(br)
		if err != nil {
			return
		}
		if resp.Status < 200 || resp.Status > 599 {
			t.Fatalf("status %d", resp.Status)
		}
		if _, ok := resp.Header["Status"]; ok {
			t.Fatal("Status header kept")
		}
		for k, vv := range resp.Header {
			if !isToken([]byte(k)) {
				t.Fatalf("header name %q is not a token", k)
			}
			for _, v := range vv {
				if strings.ContainsAny(v, "\r\n\x00\x7f") {
					t.Fatalf("header %s: control byte in %q", k, v)
				}
			}
		}
		if loc := resp.LocalRedirect; loc != "" && (!strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//")) {
			t.Fatalf("local redirect to %q", loc)
		}
		if resp.Header.Get("Location") == "" && resp.Header.Get("Content-Type") == "" && resp.Status != 204 && resp.Status != 304 {
			t.Fatalf("status %d without Content-Type", resp.Status)
		}
		// What is left is the body: the input after the first empty line.
		rest, _ := io.ReadAll(br)
		if end := headerEnd(out); end < 0 || !bytes.Equal(rest, out[end:]) {
			t.Fatalf("body %q, want what follows the header block of %q", rest, out)
		}
		w := httptest.NewRecorder()
		resp.WriteHeader(w)
		for k := range w.Header() {
			if hopByHop(k) {
				t.Fatalf("hop-by-hop header %s sent", k)
			}
		}
		if w.Code != resp.Status {
			t.Fatalf("sent %d, want %d", w.Code, resp.Status)
		}
	})
}

// headerEnd returns the offset after the first empty line ("\n" or
// "\r\n" right after a line end, or at the start), or -1.
func headerEnd(b []byte) int {
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		line := bytes.TrimSuffix(b[i:i+j], []byte("\r"))
		i += j + 1
		if len(line) == 0 {
			return i
		}
	}
	return -1
}
