package tenant

import (
	"errors"
	"fmt"
	"strings"
)

// Error is a configuration error located in a file.
type Error struct {
	File string
	Line int // 0 when the error concerns the whole file
	Col  int // 0 when unknown
	Msg  string
}

// Error prints FILE:LINE:COL: message, FILE:LINE: message or FILE: message.
func (e *Error) Error() string {
	if e.Line > 0 && e.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// ErrorList is every error found while loading a configuration, in file
// order. Its Error method prints one error per line.
type ErrorList []*Error

func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Errors returns the located errors in err, or nil when it has none.
func Errors(err error) []*Error {
	var l ErrorList
	if errors.As(err, &l) {
		return l
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return nil
}
