package bench

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"

	"github.com/hostd/hostd/bench/load"
)

// modeColor gives every sandbox mode the same color in both charts.
var modeColor = map[string]string{
	"none":               "#4477aa",
	"uring":              "#66ccee",
	"suexec":             "#ccbb44",
	"thread":             "#228833",
	"thread-per-request": "#ee6677",
	"inline":             "#aa3377",
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// barColor is a mode's color, or a peer's (peers.go).
func barColor(m string) string {
	if c, ok := peerColor[m]; ok {
		return c
	}
	return modeColor[m]
}

// textWidth estimates the width of s in pixels at font size px (sans-serif,
// a little generous), so that no title or footer is cut at the edge.
func textWidth(s string, px float64) int { return int(float64(len(s))*px*0.6) + 1 }

func svgHeader(b *strings.Builder, w, h int, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(b, `<text x="%d" y="20" text-anchor="middle" font-size="14" font-weight="bold">%s</text>`+"\n", w/2, html.EscapeString(title))
}

// sweepSVG is the paper's figure: achieved responses/s against offered
// requests/s, one line per mode, one panel per swept handler.
func (r *Report) sweepSVG() []byte {
	var handlers []string
	for _, s := range r.Sweeps {
		if s.Status == StatusOK && !contains(handlers, s.Handler) {
			handlers = append(handlers, s.Handler)
		}
	}
	const pw, ph, left, top, bottom = 420, 320, 70, 40, 60
	const title = "hostd: achieved vs offered load (open loop, HTTPS keep-alive)"
	// As wide as the panels, the title and the machine line (the title
	// was cut at the right edge with one panel).
	w := max(max(1, len(handlers))*(pw+20)+20, textWidth(title, 14)+40, textWidth(r.machineLine(), 12)+40)
	h := top + ph + bottom + 20
	var b strings.Builder
	svgHeader(&b, w, h, title)
	if len(handlers) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">no sweep ran</text>`+"\n", w/2, h/2)
	}
	for pi, hn := range handlers {
		x0 := 20 + pi*(pw+20) + left
		iw, ih := pw-left, ph
		maxX, maxY := 0.0, 0.0
		for _, s := range r.Sweeps {
			if s.Handler != hn || s.Status != StatusOK {
				continue
			}
			for _, p := range s.Points {
				maxX, maxY = max(maxX, p.Offered), max(maxY, p.RPS)
			}
		}
		maxX = niceMax(maxX)
		maxY = niceMax(max(maxY, maxX*0.5))
		px := func(v float64) float64 { return float64(x0) + v/maxX*float64(iw) }
		py := func(v float64) float64 { return float64(top+ih) - v/maxY*float64(ih) }
		hd, _ := handlerByName(hn)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-weight="bold">%s</text>`+"\n", x0+iw/2, top-6, html.EscapeString(hd.Desc))
		for i := 0; i <= 5; i++ {
			xv, yv := maxX*float64(i)/5, maxY*float64(i)/5
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", px(xv), top, px(xv), top+ih)
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", x0, py(yv), x0+iw, py(yv))
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%.0f</text>`+"\n", px(xv), top+ih+16, xv)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.0f</text>`+"\n", x0-4, py(yv)+4, yv)
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", x0, top, iw, ih)
		// y = x: every offered request answered.
		d := min(maxX, maxY)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="4 4"/>`+"\n", px(0), py(0), px(d), py(d))
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">offered requests/s</text>`+"\n", x0+iw/2, top+ih+34)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" transform="rotate(-90 %d %d)">responses/s</text>`+"\n", x0-52, top+ih/2, x0-52, top+ih/2)
		ly := top + 14
		for _, s := range r.Sweeps {
			if s.Handler != hn || s.Status != StatusOK {
				continue
			}
			c := modeColor[s.Mode]
			var pts []string
			for _, p := range s.Points {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.Offered), py(p.RPS)))
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), c)
			for _, p := range s.Points {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s offered %.0f achieved %.0f</title></circle>`+"\n",
					px(p.Offered), py(p.RPS), c, s.Mode, p.Offered, p.RPS)
			}
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s</text>`+"\n",
				x0+8, ly, x0+28, ly, c, x0+32, ly+4, html.EscapeString(s.Mode))
			ly += 16
		}
	}
	fmt.Fprintf(&b, `<text x="20" y="%d" fill="#555">%s</text>`+"\n", h-10, html.EscapeString(r.machineLine()))
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// handlersSVG is the handler comparison: requests/s over HTTPS
// keep-alive, one group of bars per handler, one bar per mode. Handlers
// that start a process per request (CGI, php-cgi) answer 100-1000x fewer
// requests than the in-process ones: they get a second panel with its own
// scale, so their bars are not a line on the axis.
func (r *Report) handlersSVG() []byte {
	var groups []string
	bars := map[string][]svgBar{}
	maxY := 0.0
	modes := append(append([]string(nil), Modes...), PeerNames...)
	for _, h := range Handlers {
		for _, m := range modes {
			c := r.cell(h.Name, m, load.HTTPS)
			if c == nil {
				continue
			}
			if !contains(groups, h.Name) {
				groups = append(groups, h.Name)
			}
			bars[h.Name] = append(bars[h.Name], svgBar{m, c.Result.RPS})
			maxY = max(maxY, c.Result.RPS)
		}
	}
	var fast, slow []string
	for _, g := range groups {
		top := 0.0
		for _, br := range bars[g] {
			top = max(top, br.rps)
		}
		if top < maxY/20 {
			slow = append(slow, g)
		} else {
			fast = append(fast, g)
		}
	}
	if len(fast) == 0 {
		fast, slow = slow, nil
	}
	const left, top, ih, bw, gap = 80, 70, 320, 22, 30
	width := func(gs []string) int {
		gw := 0
		for _, g := range gs {
			gw += len(bars[g])*bw + gap
		}
		return left + gw
	}
	const title = "hostd: requests/s by handler and sandbox mode (closed loop, HTTPS keep-alive)"
	pw := width(fast)
	w := pw + 40
	if len(slow) > 0 {
		w += width(slow)
	}
	w = max(w, 640, textWidth(title, 14)+40, textWidth(r.machineLine(), 12)+40)
	h := top + ih + 90
	var b strings.Builder
	svgHeader(&b, w, h, title)
	barPanel(&b, bars, fast, 0, pw, "in-process handlers")
	if len(slow) > 0 {
		barPanel(&b, bars, slow, pw+20, w-20, "a process per request (own scale)")
	}
	lx := left
	for _, m := range modes {
		if !slices.ContainsFunc(groups, func(g string) bool { return slices.ContainsFunc(bars[g], func(br svgBar) bool { return br.mode == m }) }) {
			continue // only the modes and peers that ran
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			lx, top+ih+30, barColor(m), lx+16, top+ih+40, m)
		lx += 40 + 8*len(m)
	}
	fmt.Fprintf(&b, `<text x="20" y="%d" fill="#555">%s</text>`+"\n", h-10, html.EscapeString(r.machineLine()))
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

type svgBar struct {
	mode string
	rps  float64
}

// barPanel draws groups of bars between x0 and x1 with their own y scale.
func barPanel(b *strings.Builder, bars map[string][]svgBar, groups []string, x0, x1 int, caption string) {
	const left, top, ih, bw, gap = 80, 70, 320, 22, 30
	maxY := 0.0
	for _, g := range groups {
		for _, br := range bars[g] {
			maxY = max(maxY, br.rps)
		}
	}
	maxY = niceMax(maxY)
	py := func(v float64) float64 { return float64(top+ih) - v/maxY*float64(ih) }
	l := x0 + left
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" font-weight="bold">%s</text>`+"\n", (l+x1)/2, top-12, html.EscapeString(caption))
	for i := 0; i <= 5; i++ {
		yv := maxY * float64(i) / 5
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", l, py(yv), x1, py(yv))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%.0f</text>`+"\n", l-4, py(yv)+4, yv)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" transform="rotate(-90 %d %d)">requests/s</text>`+"\n", x0+20, top+ih/2, x0+20, top+ih/2)
	x := l + gap/2
	for _, g := range groups {
		gx := x
		for _, br := range bars[g] {
			fmt.Fprintf(b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %s: %.0f req/s</title></rect>`+"\n",
				x, py(br.rps), bw-2, float64(top+ih)-py(br.rps), barColor(br.mode), g, br.mode, br.rps)
			lx, ly := float64(x)+float64(bw)/2+3, py(br.rps)-4
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="9" transform="rotate(-90 %.1f %.1f)">%.0f</text>`+"\n", lx, ly, lx, ly, br.rps)
			x += bw
		}
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (gx+x)/2, top+ih+16, html.EscapeString(g))
		x += gap
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", l, top+ih, x1, top+ih)
}

func (r *Report) machineLine() string {
	m := r.Machine
	return fmt.Sprintf("%s, %d CPUs (server on %v, load on %v), %s, %s, %d tenants, %d conns, %s/cell",
		m.CPUModel, m.NumCPU, m.ServerCPUs, m.LoadCPUs, m.Kernel, m.GoVersion, r.Options.Tenants, r.Options.Conns, r.Options.Duration)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
