package scalability

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Summary is the headline of a Report for one mode (admission on or off).
type Summary struct {
	Admission bool
	// Peak is the highest replies/s of the sweep, at PeakClients.
	Peak        float64
	PeakClients int
	// Saturation is the mode's saturating client count (see Saturation).
	Saturation int
	// At2x and At4x are replies/s at 2x and 4x Saturation clients (the
	// nearest measured point at or above); 0 when not measured.
	At2x, At4x float64
}

// Retained2x and Retained4x are At2x and At4x as fractions of Peak.
func (s Summary) Retained2x() float64 { return frac(s.At2x, s.Peak) }

// Retained4x is At4x as a fraction of Peak.
func (s Summary) Retained4x() float64 { return frac(s.At4x, s.Peak) }

func frac(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Summaries returns the summary without, then with, admission control.
func (r *Report) Summaries() [2]Summary {
	sum := func(pts []Point, admission bool) Summary {
		sat := Saturation(pts)
		s := Summary{Admission: admission, Saturation: sat}
		for _, p := range pts {
			if p.RepliesPerSec > s.Peak {
				s.Peak, s.PeakClients = p.RepliesPerSec, p.Clients
			}
		}
		at := func(n int) float64 {
			for _, p := range pts {
				if sat > 0 && p.Clients >= n {
					return p.RepliesPerSec
				}
			}
			return 0
		}
		s.At2x, s.At4x = at(2*sat), at(4*sat)
		return s
	}
	return [2]Summary{sum(r.Off, false), sum(r.On, true)}
}

// WriteTable writes the points and the summary as Markdown tables.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	o := r.Options
	fmt.Fprintf(&b, "Closed loop: think %v (exp.), timeout %v, %d requests/session (mean), %d B page, %s certificate, %v measured per point.\n\n",
		o.think(), o.timeout(), o.RequestsPerSession, o.PageSize, o.KeyType, o.Duration)
	b.WriteString("| clients | admission | replies/s | p90 latency | timeouts | refused | full % | resumed | server CPU |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for i := range r.Off {
		for _, p := range []Point{r.Off[i], pointAt(r.On, i)} {
			if p.Clients == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %d | %s | %.1f | %v | %d | %d | %.1f | %d | %.0f%% (%.1fs) |\n", p.Clients, onOff(p.Admission),
				p.RepliesPerSec, p.P90.Round(time.Millisecond), p.Timeouts, p.Refused, p.FullPct(), p.Resumed, 100*p.CPU, p.CPUSeconds)
		}
	}
	b.WriteString("\n| admission | peak replies/s (clients) | saturation | at 2x | at 4x |\n|---|---:|---:|---:|---:|\n")
	for _, s := range r.Summaries() {
		fmt.Fprintf(&b, "| %s | %.1f (%d) | %d clients | %.1f (%.0f%%) | %.1f (%.0f%%) |\n", onOff(s.Admission), s.Peak, s.PeakClients,
			s.Saturation, s.At2x, 100*s.Retained2x(), s.At4x, 100*s.Retained4x())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func pointAt(pts []Point, i int) Point {
	if i < len(pts) {
		return pts[i]
	}
	return Point{}
}

// WriteSVG charts replies/s against clients (log scale) with and
// without admission control.
func (r *Report) WriteSVG(w io.Writer) error {
	const W, H, left, right, top, bottom = 720, 420, 70, 150, 40, 50
	pw, ph := float64(W-left-right), float64(H-top-bottom)
	var maxY float64
	minX, maxX := 0, 0
	for _, pts := range [][]Point{r.Off, r.On} {
		for _, p := range pts {
			maxY = max(maxY, p.RepliesPerSec)
			if minX == 0 || p.Clients < minX {
				minX = p.Clients
			}
			maxX = max(maxX, p.Clients)
		}
	}
	if maxY == 0 {
		maxY = 1
	}
	maxY *= 1.1
	xOf := func(c int) float64 {
		if maxX == minX {
			return left + pw/2
		}
		return left + pw*logRatio(c, minX)/logRatio(maxX, minX)
	}
	yOf := func(v float64) float64 { return top + ph*(1-v/maxY) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">hostd throughput vs emulated clients (closed loop, timeout %v)</text>`+"\n", left, r.Options.timeout())
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, H-bottom, W-right, H-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, H-bottom)
	for i := 0; i <= 5; i++ {
		v := maxY * float64(i) / 5
		y := yOf(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%.0f</text>`+"\n",
			left, y, W-right, y, left-5, y+4, v)
	}
	for _, p := range r.Off {
		x := xOf(p.Clients)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x, H-bottom+16, p.Clients)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">clients</text>`+"\n", left+pw/2, H-12)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" transform="rotate(-90 16 %.1f)" text-anchor="middle">replies/s</text>`+"\n", top+ph/2, top+ph/2)
	for i, s := range []struct {
		pts   []Point
		name  string
		color string
	}{{r.Off, "admission off", "#d62728"}, {r.On, "admission on", "#1f77b4"}} {
		var pts []string
		for _, p := range s.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(p.Clients), yOf(p.RepliesPerSec)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", s.color, strings.Join(pts, " "))
		for _, p := range s.pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", xOf(p.Clients), yOf(p.RepliesPerSec), s.color)
		}
		ly := top + 20 + 20*i
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s</text>`+"\n",
			W-right+10, ly, W-right+30, ly, s.color, W-right+35, ly+4, s.name)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func logRatio(a, b int) float64 {
	return log2(float64(a)) - log2(float64(b))
}

func log2(x float64) float64 { return math.Log2(x) }
