package host_test

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostd/hostd/host/hosttest"
	"github.com/hostd/hostd/sandbox/sandboxtest"
)

// h2specKnown are the h2spec v2.2.1 cases hostd's HTTP/2 (net/http's)
// does not pass, and why hostd's listener or configuration cannot fix
// them (docs/performance.md lists them too).
var h2specKnown = map[string]string{
	"http2/6.5.3: Sends multiple values of SETTINGS_INITIAL_WINDOW_SIZE":                                            "x/net/http2's framer refuses a SETTINGS frame with a repeated setting (connection closed with PROTOCOL_ERROR) where RFC 9113 wants them applied in order",
	"http2/8.1.2.2: Sends a HEADERS frame that contains the connection-specific header field":                       "net/http accepts Connection and the like in HTTP/2 requests for compatibility; a handler can answer 400 but cannot send RST_STREAM(PROTOCOL_ERROR)",
	"http2/8.1.2.2: Sends a HEADERS frame that contains the TE header field with any value other than \"trailers\"": "same as the connection-specific fields",
	"http2/6.9.2: Sends a SETTINGS frame for window size to be negative":                                            "skipped by h2spec itself: it needs a response larger than the initial window",
}

// TestH2Spec runs h2spec (make test installs it with go install) against
// hostd's HTTP/2 over TLS: every case passes but the known ones above.
func TestH2Spec(t *testing.T) {
	bin, err := exec.LookPath("h2spec")
	if err != nil {
		gobin := os.Getenv("GOBIN")
		if gobin == "" {
			gobin = filepath.Join(os.Getenv("HOME"), "go", "bin")
		}
		bin = filepath.Join(gobin, "h2spec")
		if _, err := os.Stat(bin); err != nil {
			sandboxtest.Skipf(t, "h2spec not installed: make test installs it (go install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible)")
		}
	}
	if testing.Short() {
		t.Skip("h2spec takes about 20 s")
	}
	files := hosttest.Files{
		"vhosts.d/a.toml": "server_name = \"127.0.0.1\"\nroot = \"../pub\"\nrun_as_server = true\n",
		"pub/index.html":  "hello\n",
	}
	s := hosttest.Start(t, files)
	host, port, _ := strings.Cut(s.HTTPSAddr(), ":")
	run := func() (failed map[string]bool, total, passed int) {
		report := filepath.Join(t.TempDir(), "h2spec.xml")
		out, _ := exec.Command(bin, "-t", "-k", "-h", host, "-p", port, "-o", "10", "-j", report).CombinedOutput()
		raw, err := os.ReadFile(report)
		if err != nil {
			t.Fatalf("h2spec wrote no report: %v\n%s", err, out)
		}
		var r struct {
			Suites []struct {
				Cases []struct {
					Package string    `xml:"package,attr"`
					Name    string    `xml:"classname,attr"`
					Error   *struct{} `xml:"error"`
					Failure *struct{} `xml:"failure"`
					Skipped *struct{} `xml:"skipped"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal(raw, &r); err != nil {
			t.Fatalf("h2spec report: %v", err)
		}
		failed = map[string]bool{}
		for _, su := range r.Suites {
			for _, c := range su.Cases {
				total++
				id := c.Package + ": " + c.Name
				if c.Error == nil && c.Failure == nil && c.Skipped == nil {
					passed++
				} else if h2specKnown[id] == "" {
					failed[id] = true
				}
			}
		}
		return failed, total, passed
	}
	failed, total, passed := run()
	if len(failed) > 0 {
		// A case that depends on timing (a stream that ends before the
		// client's frames arrive, on a loaded machine) gets a second run:
		// what fails both times fails the test.
		again, _, _ := run()
		for id := range failed {
			if !again[id] {
				t.Logf("h2spec: %s failed once, passed on the second run", id)
				delete(failed, id)
				passed++
			}
		}
	}
	for id := range failed {
		t.Errorf("h2spec: %s failed (not a known failure)", id)
	}
	t.Logf("h2spec: %d of %d cases passed", passed, total)
	if total < 145 || passed < total-len(h2specKnown) {
		t.Errorf("h2spec: %d of %d passed, want at least %d", passed, total, total-len(h2specKnown))
	}
}
