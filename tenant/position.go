package tenant

import (
	"bufio"
	"bytes"
	"strings"
)

// locator finds the line of a key in a TOML file's source, for errors
// about values that decoded fine but failed validation. BurntSushi/toml
// keeps key positions private, so this scans the (already parsed, hence
// well-formed) source: table headers, array-of-tables headers and
// `key =` lines. It is not a TOML parser; it falls back to the table
// header's line, then to 0.
type locator struct {
	lines []string
}

func newLocator(src []byte) *locator {
	var l locator
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l.lines = append(l.lines, sc.Text())
	}
	return &l
}

// line returns the 1-based line of key inside table (the dotted table
// name, "" for the top level); idx selects the idx-th [[table]] for
// arrays of tables (-1 for plain tables). Key "" asks for the header.
func (l *locator) line(table string, idx int, key string) int {
	line, _ := l.pos(table, idx, key)
	return line
}

// pos is line plus the 1-based column of the key's value (of the '[' for
// a header); the column is 0 when only the table's header was found.
func (l *locator) pos(table string, idx int, key string) (line, col int) {
	cur, n, header := "", -1, 0
	for i, raw := range l.lines {
		s := strings.TrimSpace(raw)
		switch {
		case strings.HasPrefix(s, "[["):
			name := strings.TrimSpace(strings.TrimSuffix(strings.SplitN(s[2:], "]]", 2)[0], "]]"))
			cur = name
			if name == table {
				n++
			}
			if cur == table && n == idx && key == "" {
				return i + 1, strings.IndexByte(raw, '[') + 1
			}
			if cur == table && n == idx {
				header = i + 1
			}
			continue
		case strings.HasPrefix(s, "["):
			cur = strings.TrimSpace(strings.SplitN(s[1:], "]", 2)[0])
			if cur == table && idx < 0 {
				if key == "" {
					return i + 1, strings.IndexByte(raw, '[') + 1
				}
				header = i + 1
			}
			continue
		}
		if cur != table || (idx >= 0 && n != idx) {
			continue
		}
		k, _, ok := strings.Cut(s, "=")
		if !ok {
			continue
		}
		k = strings.Trim(strings.TrimSpace(k), `"'`)
		// A dotted key at this level: "cgi.enabled = true" for table "".
		if k == key || strings.HasPrefix(k, key+".") {
			eq := strings.IndexByte(raw, '=')
			c := eq + 1
			for c < len(raw) && (raw[c] == ' ' || raw[c] == '\t') {
				c++
			}
			return i + 1, c + 1
		}
	}
	return header, 0
}

// keyCol returns the 1-based column where line's text starts (a key), or
// 0 for no such line.
func (l *locator) keyCol(line int) int {
	if line < 1 || line > len(l.lines) {
		return 0
	}
	raw := l.lines[line-1]
	return len(raw) - len(strings.TrimLeft(raw, " \t")) + 1
}
