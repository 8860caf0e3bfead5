package phpfpm

import (
	"reflect"
	"strings"
	"testing"
)

func TestEvents(t *testing.T) {
	cases := []struct {
		name    string
		records []string
		want    []string
	}{
		{"one message", []string{"PHP message: PHP Warning:  x in /a.php on line 2\n"},
			[]string{"PHP message: PHP Warning:  x in /a.php on line 2"}},
		{"stack trace stays with its message", []string{"PHP message: PHP Fatal error:  Uncaught Error: y\nStack trace:\n#0 {main}\n  thrown in /a.php on line 3\n"},
			[]string{"PHP message: PHP Fatal error:  Uncaught Error: y\nStack trace:\n#0 {main}\n  thrown in /a.php on line 3"}},
		{"two messages in one record", []string{"PHP message: one\nPHP message: two\n"},
			[]string{"PHP message: one", "PHP message: two"}},
		{"a message split over records", []string{"PHP message: long ", "message\nmore\n", "PHP message: next\n"},
			[]string{"PHP message: long message\nmore", "PHP message: next"}},
		{"unterminated at the end", []string{"PHP message: cut"}, []string{"PHP message: cut"}},
		{"CR and empty lines", []string{"PHP message: a\r\n\n"}, []string{"PHP message: a\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			e := &events{emit: func(b []byte) { got = append(got, string(b)) }}
			for _, r := range tc.records {
				e.write([]byte(r))
			}
			e.flush()
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEventsBounded(t *testing.T) {
	var got []string
	e := &events{emit: func(b []byte) { got = append(got, string(b)) }}
	e.write([]byte("PHP message: " + strings.Repeat("x", 3*maxEvent) + "\n"))
	for range maxEventBytes / 1000 {
		e.write([]byte("PHP message: " + strings.Repeat("y", 1000) + "\n"))
	}
	e.flush()
	if len(got[0]) > maxEvent {
		t.Errorf("first event %d bytes, want at most %d", len(got[0]), maxEvent)
	}
	if last := got[len(got)-1]; !strings.Contains(last, "dropped") {
		t.Errorf("last event %q, want the note that the rest was dropped", last)
	}
	total := 0
	for _, g := range got {
		total += len(g)
	}
	if total > maxEventBytes+maxEvent {
		t.Errorf("%d bytes logged for one request, want about %d at most", total, maxEventBytes)
	}
}
