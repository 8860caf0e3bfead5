package host

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hostd/hostd/host/logtext"
	"github.com/hostd/hostd/sandbox"
)

// TestRunFailed: what a request whose tenant function did not return
// normally becomes, before and after the response headers went out.
func TestRunFailed(t *testing.T) {
	boom := &sandbox.PanicError{Value: "boom", Stack: []byte("goroutine 7 [running]:\nmain.f()\n")}
	abort := &sandbox.PanicError{Value: http.ErrAbortHandler}
	tests := []struct {
		name    string
		err     error
		sent    bool
		code    int  // when not aborted
		aborted bool // http.ErrAbortHandler raised
		log     string
	}{
		{"panic, nothing sent", boom, false, 500, false, `panic=boom stack="goroutine 7 [running]:\x0amain.f()\x0a"`},
		{"panic after the headers", boom, true, 0, true, "panic=boom"},
		{"abort", abort, false, 0, true, ""},
		{"abort after the headers", abort, true, 0, true, ""},
		{"not run, nothing sent", sandbox.ErrClosed, false, 503, false, "request not served"},
		{"not run after the headers", errors.New("identity"), true, 0, true, "request not served"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			v := &vhost{logger: slog.New(logtext.NewHandler(&logs, nil))}
			hw := httptest.NewRecorder()
			rec := newRecorder(hw)
			if tc.sent {
				rec.WriteHeader(200)
				rec.Write([]byte("part"))
			}
			var raised any
			func() {
				defer func() { raised = recover() }()
				v.runFailed(rec, httptest.NewRequest("GET", "/x", nil), tc.err)
			}()
			if tc.aborted != (raised == http.ErrAbortHandler) || (!tc.aborted && raised != nil) {
				t.Fatalf("raised %v, want abort %v", raised, tc.aborted)
			}
			if !tc.aborted && hw.Code != tc.code {
				t.Errorf("status %d, want %d", hw.Code, tc.code)
			}
			if tc.sent && hw.Body.String() != "part" {
				t.Errorf("body %q: an error page was appended to a started response", hw.Body.String())
			}
			if !strings.Contains(logs.String(), tc.log) || strings.Count(logs.String(), "\n") > 1 {
				t.Errorf("log %q, want one line with %q", logs.String(), tc.log)
			}
		})
	}
}
