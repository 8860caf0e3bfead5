package logtext

import (
	"context"
	"encoding"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Handler is a slog.Handler writing one line per record in slog's text
// format (time=... level=... msg=... key=value ...), with every key and
// string value escaped by this package instead of Go-quoted: a value is
// written bare when it is non-empty and holds no space, '=', '"' or
// anything Escape escapes, else between double quotes with Quote applied.
// Each record is one Write call. It is safe for concurrent use; handlers
// derived with WithAttrs and WithGroup share the writer and its lock.
type Handler struct {
	w      io.Writer
	mu     *sync.Mutex
	level  slog.Leveler
	prefix []byte // preformatted attributes from WithAttrs
	group  string // key prefix from WithGroup, "a.b."
}

// NewHandler returns a Handler writing to w. opts may be nil; only its
// Level is used (default slog.LevelInfo).
func NewHandler(w io.Writer, opts *slog.HandlerOptions) *Handler {
	h := &Handler{w: w, mu: new(sync.Mutex), level: slog.LevelInfo}
	if opts != nil && opts.Level != nil {
		h.level = opts.Level
	}
	return h
}

// Enabled reports whether records at level l are written.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// WithAttrs returns a Handler that adds attrs to every record.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	h2 := *h
	h2.prefix = slices.Clip(h.prefix)
	for _, a := range attrs {
		h2.prefix = appendAttr(h2.prefix, h.group, a)
	}
	return &h2
}

// WithGroup returns a Handler that qualifies later keys with name.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.group = h.group + name + "."
	return &h2
}

// Handle writes r as one line.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	buf := make([]byte, 0, 256)
	if !r.Time.IsZero() {
		buf = append(buf, "time="...)
		buf = r.Time.AppendFormat(buf, "2006-01-02T15:04:05.000Z07:00")
		buf = append(buf, ' ')
	}
	buf = append(buf, "level="...)
	buf = append(buf, r.Level.String()...)
	buf = append(buf, " msg="...)
	buf = appendValue(buf, r.Message)
	buf = append(buf, h.prefix...)
	r.Attrs(func(a slog.Attr) bool {
		buf = appendAttr(buf, h.group, a)
		return true
	})
	buf = append(buf, '\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(buf)
	return err
}

// appendAttr appends " key=value" (groups flattened as "group.key").
func appendAttr(buf []byte, group string, a slog.Attr) []byte {
	v := a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return buf
	}
	if v.Kind() == slog.KindGroup {
		g := group
		if a.Key != "" {
			g += a.Key + "."
		}
		for _, ga := range v.Group() {
			buf = appendAttr(buf, g, ga)
		}
		return buf
	}
	buf = append(buf, ' ')
	buf = appendValue(buf, group+a.Key)
	buf = append(buf, '=')
	return appendValue(buf, valueString(v))
}

// valueString formats a resolved, non-group value as text.
func valueString(v slog.Value) string {
	switch v.Kind() {
	case slog.KindString:
		return v.String()
	case slog.KindInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case slog.KindUint64:
		return strconv.FormatUint(v.Uint64(), 10)
	case slog.KindFloat64:
		return strconv.FormatFloat(v.Float64(), 'g', -1, 64)
	case slog.KindBool:
		return strconv.FormatBool(v.Bool())
	case slog.KindDuration:
		return v.Duration().String()
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	}
	switch x := v.Any().(type) {
	case error:
		return x.Error()
	case encoding.TextMarshaler:
		b, err := x.MarshalText()
		if err != nil {
			return "!ERROR:" + err.Error()
		}
		return string(b)
	case []byte:
		return string(x)
	default:
		return fmt.Sprintf("%+v", x)
	}
}

// appendValue appends s bare when that is unambiguous, else quoted.
func appendValue(buf []byte, s string) []byte {
	if s != "" && clean(s, quote|spaces) && !strings.Contains(s, "=") {
		return append(buf, s...)
	}
	buf = append(buf, '"')
	buf = appendEscaped(buf, s, quote)
	return append(buf, '"')
}
