package scripting

import (
	"bytes"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestParseFormBounds(t *testing.T) {
	many := strings.Repeat("a=1&", MaxFormParts) + "a=1"
	if _, err := ParseForm("application/x-www-form-urlencoded", []byte(many), FormLimits{}); err == nil {
		t.Error("more than MaxFormParts urlencoded fields accepted")
	}
	if _, err := ParseForm("application/x-www-form-urlencoded", []byte("a=%zz"), FormLimits{}); err == nil {
		t.Error("invalid escape accepted")
	}
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for i := range MaxFormParts + 1 {
		mw.WriteField(fmt.Sprint("f", i), "x")
	}
	mw.Close()
	if _, err := ParseForm(mw.FormDataContentType(), b.Bytes(), FormLimits{}); err == nil {
		t.Error("more than MaxFormParts parts accepted")
	}
	b.Reset()
	mw = multipart.NewWriter(&b)
	fw, _ := mw.CreateFormFile("f", "../../etc/passwd")
	fw.Write([]byte("0123456789"))
	mw.CreateFormFile("empty", "") // no file chosen in the browser
	mw.Close()
	m, err := ParseForm(mw.FormDataContentType(), b.Bytes(), FormLimits{MaxPart: 10})
	if err != nil {
		t.Fatal(err)
	}
	f := m["f"].(map[string]any)
	if f["filename"] != "passwd" || f["size"] != int64(10) {
		t.Errorf("file part: %v", f)
	}
	if e, ok := m["empty"].(map[string]any); !ok || e["filename"] != "" || e["size"] != int64(0) {
		t.Errorf("empty file part: %#v", m["empty"])
	}
	if _, err := ParseForm(mw.FormDataContentType(), b.Bytes(), FormLimits{MaxPart: 9}); !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("part over MaxPart: %v", err)
	}
	if m, err := ParseForm("multipart/form-data", b.Bytes(), FormLimits{}); err == nil {
		t.Errorf("no boundary: %v", m)
	}
	if m, err := ParseForm("text/plain", []byte("a=1"), FormLimits{}); err != nil || len(m) != 0 {
		t.Errorf("other type: %v %v", m, err)
	}
}

func TestCookies(t *testing.T) {
	h := http.Header{"Cookie": {`a=1; b="q"; =x; bad; c d=2; a=2`, "e=3"}}
	want := map[string]string{"a": "1", "b": "q", "e": "3"}
	if got := ParseCookies(h); !reflect.DeepEqual(got, want) {
		t.Errorf("ParseCookies = %v, want %v", got, want)
	}
	if v, ok := Cookie(h, "e"); !ok || v != "3" {
		t.Errorf("Cookie(e) = %q %v", v, ok)
	}
	if _, ok := Cookie(h, "zz"); ok {
		t.Error("Cookie(zz) found")
	}
	var sb strings.Builder
	for i := range MaxCookies + 50 {
		fmt.Fprintf(&sb, "c%d=1; ", i)
	}
	if n := len(ParseCookies(http.Header{"Cookie": {sb.String()}})); n != MaxCookies {
		t.Errorf("%d cookies kept, want %d", n, MaxCookies)
	}
	out := http.Header{}
	for _, opts := range []map[string]any{
		{"name": "a", "value": "1"},
		{"name": "b", "value": "2", "path": "/x"},
		{"name": "a", "value": "3"},
	} {
		c, err := NewCookie(opts)
		if err != nil {
			t.Fatal(err)
		}
		SetCookie(out, c)
	}
	if got := out.Values("Set-Cookie"); !reflect.DeepEqual(got, []string{"b=2; Path=/x", "a=3"}) {
		t.Errorf("Set-Cookie %q", got)
	}
	for _, bad := range []map[string]any{
		{"value": "1"}, {"name": "a b", "value": "1"}, {"name": "a", "value": "\x00"},
		{"name": "a", "value": "1", "path": "/;x"}, {"name": "a", "value": "1", "secure": "yes"},
		{"name": "a", "value": "1", "same_site": "lax-ish"}, {"name": "a", "value": "1", "expires": "soon"},
	} {
		if c, err := NewCookie(bad); err == nil {
			t.Errorf("%v accepted: %v", bad, c)
		}
	}
}
