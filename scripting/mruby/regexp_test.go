//go:build cgo && !nomruby

package mruby

import (
	"strings"
	"testing"

	"github.com/hostd/hostd/scripting"
	"github.com/hostd/hostd/scripting/scriptingtest"
)

// TestRegexp covers the Ruby side of Regexp beyond the shared cases:
// literals with options, $~ and $1, MatchData, and the String methods.
func TestRegexp(t *testing.T) {
	e := newEngine(scripting.Config{})
	defer e.Close()
	for _, tc := range []struct{ src, want string }{
		{`r.write(("Hello" =~ /l+/).to_s, $~[0], ("x" =~ /y/).inspect, $~.inspect)`, "2llnilnil"},
		{`"key=val" =~ /(\w+)=(\w+)/; r.write($1, $2, $3.inspect)`, "keyvalnil"},
		{`m = /(?<y>\d{4})-(?<m>\d\d)/.match("on 2027-01-05"); r.write(m["y"], m[:m], m.pre_match, m.post_match, m.names.join(","), m.named_captures["m"])`, "202701on -05y,m01"},
		{`m = "héllo wörld".match(/w(ö)/); r.write(m.begin(0), m.end(1), m.byteoffset(1).inspect, m.offset(0).inspect)`, "68[8, 10][6, 8]"},
		{`r.write("A\nb".match?(/a.b/im).to_s, "A\nb".match?(/a.b/i).to_s, (/a/ === "cat").to_s, (/a/ === 5).to_s)`, "truefalsetruefalse"},
		{`r.write("a1b22c".scan(/\d+/).join(","), "|", "k1=v1;k2=v2".scan(/(\w+)=(\w+)/).inspect)`, `1,22|[["k1", "v1"], ["k2", "v2"]]`},
		{`r.write("cat hat".gsub(/[ch]at/, "cat" => "dog", "hat" => "cap"), "|", "abc".gsub(/b/) { $~[0].upcase }, "|", "abc".sub(/(?<x>b)/, '[\k<x>\0\\\\]'))`, `dog cap|aBc|a[bb\]c`},
		{`s = "aaa".dup; r.write(s.sub!(/a/, "b").to_s, s, "|", s.gsub!(/z/, "y").inspect, "|", "xyz".sub("y", "Y"), "xyz".gsub("y") { "!" })`, "baabaa|nil|xYzx!z"},
		{`r.write("a1b2c".split(/\d/).inspect, "a1b2c".split(/(\d)/).inspect, "a,b,,".split(/,/).inspect, "a,b,,".split(/,/, -1).inspect, "abc".split(//).inspect, "a b".split(" ").inspect)`,
			`["a", "b", "c"]["a", "1", "b", "2", "c"]["a", "b"]["a", "b", "", ""]["a", "b", "c"]["a", "b"]`},
		{`r.write(Regexp.escape("a.b*c"), " ", Regexp.union("a.b", /c+/i).source, " ", /x/i.inspect, " ", Regexp.new("a", Regexp::IGNORECASE).match?("A").to_s)`, `a\.b\*c a\.b|(?i-s:c+) /x/i true`},
		{`r.write(/a/ == /a/ ? "eq" : "ne", /a/ == /a/i ? "eq" : "ne", /(a)(?<n>b)?/.match("a").captures.inspect)`, `eqne["a", nil]`},
		{`x = "b"; r.write("abc".match(/#{x}c/)[0], "abc".match("b.")[0])`, "bcbc"},
		// A literal is one cached, frozen Regexp; the cache key cannot be
		// confused by options that are not letters.
		{`a = []; 2.times { a << /x/ }; r.write(a[0].equal?(a[1]).to_s, a[0].frozen?.to_s, Regexp.compile("a/", "i").source, Regexp.compile("a", "/i").source)`, "truetruea/a"},
	} {
		got, _, err := run(t, e, t.TempDir(), "h.rb", tc.src)
		if err != nil || got != tc.want {
			t.Errorf("%s:\n got %q, %v\nwant %q", tc.src, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ src, want string }{
		{`Regexp.new("a(")`, "RegexpError"},
		{`/(?<!x)a/`, "RegexpError"}, // lookbehind: not RE2
		{`"abc" =~ "b"`, "TypeError"},
		{`("a" * 600000).gsub(/()/, "")`, "too many matches"},
		{`class ::String; def =~(x); 1; end; end`, "FrozenError"},
		{`class ::Regexp; def source; "x"; end; end`, "FrozenError"},
		{`/a/.instance_variable_set(:@source, "b")`, "FrozenError"},
		{`/a/.extend(Module.new { def source; "evil"; end })`, "FrozenError"},
		{`def (/a/).source; "evil"; end`, "FrozenError"},
		{`/(?<n>a)/.__names[1] << "x"`, "FrozenError"},
		{`/a/.source << "x"`, "FrozenError"},
	} {
		_, _, err := run(t, e, t.TempDir(), "h.rb", tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %s", tc.src, err, tc.want)
		}
	}
}

// TestRegexpCacheAcrossTenants: one tenant's Regexp subclass, made with
// Regexp.compile, never comes back from another tenant's literal on the
// same VM.
func TestRegexpCacheAcrossTenants(t *testing.T) {
	pool := NewPool(1)
	defer pool.Close()
	carol := pool.Engine(scripting.Config{FS: scriptingtest.RootFS()})
	dave := pool.Engine(scripting.Config{FS: scriptingtest.RootFS()})
	evil := `class Evil < Regexp
  def match(*a); "stolen"; end
end
Evil.compile("x")
Evil.compile("x", "i")
class EvilString < String
  def to_s; "stolen"; end
  def ==(o); true; end
end
Regexp.compile(EvilString.new("y"))
r.write(Evil.compile("x").class.to_s)`
	if got, _, err := run(t, carol, t.TempDir(), "h.rb", evil); err != nil || !strings.HasSuffix(got, "Evil") {
		t.Fatalf("carol: %q %v", got, err)
	}
	got, _, err := run(t, dave, t.TempDir(), "h.rb", `r.write(/x/.class.to_s, " ", /x/i.class.to_s, " ", /x/.match("x")[0], " ", /y/.source.class.to_s)`)
	if err != nil || got != "Regexp Regexp x String" {
		t.Fatalf("dave: %q %v", got, err)
	}
}

// TestRegexpFastPath covers Regexp#match and match? through the C fast
// path (hostd_mruby.c, regex_fast.go) and the calls it hands to the Ruby
// Regexp#match: blocks (with break, next and a method's return), a
// position, String subclasses, nil, failed matches resetting $~ and $1,
// more groups than the fast path holds, and the errors it must still
// raise.
func TestRegexpFastPath(t *testing.T) {
	e := newEngine(scripting.Config{Limits: scripting.Limits{MaxInput: 1 << 16}})
	defer e.Close()
	many := strings.Repeat("(a)", 40)
	for _, tc := range []struct{ src, want string }{
		{`m = /(\d+)-(\d+)?/.match("ab 12- cd"); r.write(m[0], "|", m[1], "|", m[2].inspect, "|", m.string, m.string.frozen?.to_s, "|", $~.equal?(m).to_s, $1, $2.inspect)`, "12-|12|nil|ab 12- cdtrue|true12nil"},
		{`/(a)/.match("a"); x = /(b)/.match("c"); r.write(x.inspect, $~.inspect, $1.inspect)`, "nilnilnil"},
		{`r.write(/b/.match("abcb", 2).begin(0).to_s, /b/.match("abcb", 0).begin(0).to_s, /b/.match("ab", -1).begin(0).to_s, /b/.match("ab", 5).inspect)`, "311nil"},
		{`r.write(/(b)/.match("abc") { |m| m[1] * 2 }, /z/.match("abc") { |m| "never" }.inspect)`, "bbnil"},
		{`x = /(b)/.match("abc") { |m| break "broke" }; r.write(x)`, "broke"},
		{`a = ["xb", "y"].map { |s| /b/.match(s) { |m| next "n" } }; r.write(a.inspect)`, `["n", nil]`},
		{`def f; /b/.match("b") { |m| return "ret" }; "no"; end; r.write(f)`, "ret"},
		{`begin; /b/.match("b") { raise "inner" }; rescue => e; r.write(e.message); end`, "inner"},
		{`class S < String; end; m = /b/.match(S.new("abc")); r.write(m[0], m.string.class.to_s)`, "bString"},
		{`r.write(/a/.match(nil).inspect, $~.inspect, /1/.match(123)[0], /b/.match(:abc)[0])`, "nilnil1b"},
		{`r.write(/b/.match?("abc").to_s, /z/.match?("abc").to_s, /b/.match?(nil).to_s); /q/.match?("q"); r.write($~.inspect)`, "truefalsefalsenil"},
		{`/(x)/.match("x"); /y/.match?("y"); r.write($1)`, "x"},
		{`s = "aé" + "a" * 3; m = /(a+)$/.match(s); r.write(m.begin(1).to_s, m[1])`, "2aaa"},
		{`m = /` + many + `/.match("` + strings.Repeat("a", 40) + `"); r.write(m.size.to_s, m[40], $9)`, "41aa"},
		{`m = "x=1" =~ /(\w)=(\d)/; r.write(m.to_s, $2, "k=v".match(/(\w)=(\w)/)[2])`, "01v"},
		{`r.write(/b/.__match("abc", 0, false).to_s, /b/.__match("abc", 2, true).inspect)`, "truenil"},
	} {
		got, _, err := run(t, e, t.TempDir(), "h.rb", tc.src)
		if err != nil || got != tc.want {
			t.Errorf("%s:\n got %q, %v\nwant %q", tc.src, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ src, want string }{
		{`/a/.match("a" * 70000)`, "input limit"},
		{`/a/.match?("a" * 70000)`, "input limit"},
		{`/a/.__match("a", "x", true)`, "TypeError"},
		{`Regexp.allocate.match("a")`, "must be a String"},
		{`class E < String; def to_s; 5; end; end; /a/.match(E.new("a"))`, "must be a String"},
		{`/(a{100}){100}/.match("a" * 65000)`, "RegexpError"},
	} {
		_, _, err := run(t, e, t.TempDir(), "h.rb", tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %s", tc.src, err, tc.want)
		}
	}
}
