package logtext

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, escape, quote, field string }{
		{"plain text", "plain text", "plain text", `plain\x20text`},
		{"a\nb\rc", `a\x0ab\x0dc`, `a\x0ab\x0dc`, `a\x0ab\x0dc`},
		{"\x1b[31mred\x00", `\x1b[31mred\x00`, `\x1b[31mred\x00`, `\x1b[31mred\x00`},
		{`back\x0aslash`, `back\x5cx0aslash`, `back\x5cx0aslash`, `back\x5cx0aslash`},
		{`say "hi"`, `say "hi"`, `say \x22hi\x22`, `say\x20\x22hi\x22`},
		{"tab\tdel\x7f", `tab\x09del\x7f`, `tab\x09del\x7f`, `tab\x09del\x7f`},
		{"bad \xff utf8", `bad \xff utf8`, `bad \xff utf8`, `bad\x20\xff\x20utf8`},
		{"csi \u009b2J sep\u2028 rtl\u202e", `csi \u+009b2J sep\u+2028 rtl\u+202e`, `csi \u+009b2J sep\u+2028 rtl\u+202e`, `csi\x20\u+009b2J\x20sep\u+2028\x20rtl\u+202e`},
		{"日本語 ok é", "日本語 ok é", "日本語 ok é", `日本語\x20ok\x20é`},
	}
	for _, tc := range tests {
		if got := Escape(tc.in); got != tc.escape {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.escape)
		}
		if got := Quote(tc.in); got != tc.quote {
			t.Errorf("Quote(%q) = %q, want %q", tc.in, got, tc.quote)
		}
		if got := Field(tc.in); got != tc.field {
			t.Errorf("Field(%q) = %q, want %q", tc.in, got, tc.field)
		}
		if got := string(AppendBytes([]byte("p:"), []byte(tc.in))); got != "p:"+tc.escape {
			t.Errorf("AppendBytes(%q) = %q", tc.in, got)
		}
	}
}

// FuzzEscape checks the invariants every log writer relies on: the output
// is one line of printable text without quotes where asked.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a\nb", "\x1b]0;x\x07", "\xc2\x9b", "\u2029", `\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Escape(s), Quote(s), Field(s)} {
			for i := 0; i < len(out); i++ {
				if c := out[i]; c < 0x20 || c == 0x7f {
					t.Fatalf("%q -> %q holds control byte %#x", s, out, c)
				}
			}
			if strings.ContainsAny(out, "\u2028\u2029\u202e\u0085\u009b") {
				t.Fatalf("%q -> %q holds an invisible character", s, out)
			}
		}
		if strings.Contains(Quote(s), `"`) || strings.ContainsAny(Field(s), `" `) {
			t.Fatalf("%q: quote or space left", s)
		}
	})
}

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})).
		With("vhost", "a.example").WithGroup("req")
	log.Info("hook said\nFAKE level=ERROR msg=\"root login\"", "path", "/x y", "n", 3, "err", errors.New("boom\r\nnext"),
		"empty", "", "d", time.Second, slog.Group("g", "k", "v=w"))
	log.Debug("plain")
	out := buf.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %d:\n%s", len(lines), out)
	}
	for _, want := range []string{
		`level=INFO msg="hook said\x0aFAKE level=ERROR msg=\x22root login\x22"`,
		` vhost=a.example req.path="/x y" req.n=3 req.err="boom\x0d\x0anext" req.empty="" req.d=1s req.g.k="v=w"`,
	} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("line %q lacks %q", lines[0], want)
		}
	}
	if !strings.HasPrefix(lines[0], "time=") || !strings.HasSuffix(lines[1], "level=DEBUG msg=plain vhost=a.example") {
		t.Errorf("lines: %q", lines)
	}
}
