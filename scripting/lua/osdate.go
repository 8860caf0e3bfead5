package lua

import (
	"strconv"
	"strings"
	"time"

	glua "github.com/yuin/gopher-lua"
)

// osDate is os.date([format [, time]]) with C's strftime conversions in
// the C locale. It replaces gopher-lua's, whose %a always gives "mon" and
// whose *t has no yday. A format starting with '!' is in UTC; "*t" gives
// a table (year, month, day, hour, min, sec, wday, yday, isdst).
func osDate(L *glua.LState) int {
	format := L.OptString(1, "%c")
	t := time.Now()
	if L.GetTop() >= 2 {
		n := float64(L.CheckNumber(2))
		if n < -62135596800 || n > 253402300799 {
			L.ArgError(2, "time out of range")
		}
		t = time.Unix(int64(n), 0)
	}
	if strings.HasPrefix(format, "!") {
		format = format[1:]
		t = t.UTC()
	}
	if strings.HasPrefix(format, "*t") {
		r := L.CreateTable(0, 9)
		r.RawSetString("year", glua.LNumber(t.Year()))
		r.RawSetString("month", glua.LNumber(t.Month()))
		r.RawSetString("day", glua.LNumber(t.Day()))
		r.RawSetString("hour", glua.LNumber(t.Hour()))
		r.RawSetString("min", glua.LNumber(t.Minute()))
		r.RawSetString("sec", glua.LNumber(t.Second()))
		r.RawSetString("wday", glua.LNumber(t.Weekday()+1))
		r.RawSetString("yday", glua.LNumber(t.YearDay()))
		r.RawSetString("isdst", glua.LBool(t.IsDST()))
		L.Push(r)
		return 1
	}
	if len(format) > 4096 {
		L.ArgError(1, "format is too long")
	}
	L.Push(glua.LString(strftime(t, format)))
	return 1
}

// strftime formats t as C's strftime does in the C locale.
func strftime(t time.Time, format string) string {
	var b []byte
	pad := func(n, width int, c byte) {
		s := strconv.Itoa(n)
		for i := len(s); i < width; i++ {
			b = append(b, c)
		}
		b = append(b, s...)
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b = append(b, c)
			continue
		}
		i++
		switch format[i] {
		case 'a':
			b = append(b, t.Weekday().String()[:3]...)
		case 'A':
			b = append(b, t.Weekday().String()...)
		case 'b', 'h':
			b = append(b, t.Month().String()[:3]...)
		case 'B':
			b = append(b, t.Month().String()...)
		case 'c':
			b = append(b, t.Format("Mon Jan _2 15:04:05 2006")...)
		case 'C':
			pad(t.Year()/100, 2, '0')
		case 'd':
			pad(t.Day(), 2, '0')
		case 'D':
			b = append(b, t.Format("01/02/06")...)
		case 'e':
			pad(t.Day(), 2, ' ')
		case 'F':
			b = append(b, t.Format("2006-01-02")...)
		case 'H':
			pad(t.Hour(), 2, '0')
		case 'I':
			pad((t.Hour()+11)%12+1, 2, '0')
		case 'j':
			pad(t.YearDay(), 3, '0')
		case 'm':
			pad(int(t.Month()), 2, '0')
		case 'M':
			pad(t.Minute(), 2, '0')
		case 'n':
			b = append(b, '\n')
		case 'p':
			if t.Hour() < 12 {
				b = append(b, "AM"...)
			} else {
				b = append(b, "PM"...)
			}
		case 'R':
			b = append(b, t.Format("15:04")...)
		case 's':
			b = strconv.AppendInt(b, t.Unix(), 10)
		case 'S':
			pad(t.Second(), 2, '0')
		case 't':
			b = append(b, '\t')
		case 'T', 'X':
			b = append(b, t.Format("15:04:05")...)
		case 'u':
			pad((int(t.Weekday())+6)%7+1, 1, '0')
		case 'w':
			pad(int(t.Weekday()), 1, '0')
		case 'x':
			b = append(b, t.Format("01/02/06")...)
		case 'y':
			pad(t.Year()%100, 2, '0')
		case 'Y':
			pad(t.Year(), 1, '0')
		case 'z':
			b = append(b, t.Format("-0700")...)
		case 'Z':
			b = append(b, t.Format("MST")...)
		case '%':
			b = append(b, '%')
		default:
			b = append(b, '%', format[i])
		}
	}
	return string(b)
}
