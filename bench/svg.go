package bench

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/hostd/hostd/bench/load"
)

// modeColor gives every sandbox mode the same color in both charts.
var modeColor = map[string]string{
	"none":               "#4477aa",
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
	w := max(1, len(handlers))*(pw+20) + 20
	h := top + ph + bottom + 20
	var b strings.Builder
	svgHeader(&b, w, h, "hostd: achieved vs offered load (open loop, HTTPS keep-alive)")
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
// keep-alive, one group of bars per handler, one bar per mode.
func (r *Report) handlersSVG() []byte {
	type bar struct {
		mode string
		rps  float64
	}
	var groups []string
	bars := map[string][]bar{}
	maxY := 0.0
	for _, h := range Handlers {
		for _, m := range Modes {
			c := r.cell(h.Name, m, load.HTTPS)
			if c == nil {
				continue
			}
			if !contains(groups, h.Name) {
				groups = append(groups, h.Name)
			}
			bars[h.Name] = append(bars[h.Name], bar{m, c.Result.RPS})
			maxY = max(maxY, c.Result.RPS)
		}
	}
	const left, top, ih, bw, gap = 80, 70, 320, 22, 30
	gw := 0
	for _, g := range groups {
		gw += len(bars[g])*bw + gap
	}
	w := max(left+gw+40, 640)
	h := top + ih + 90
	var b strings.Builder
	svgHeader(&b, w, h, "hostd: requests/s by handler and sandbox mode (closed loop, HTTPS keep-alive)")
	maxY = niceMax(maxY)
	py := func(v float64) float64 { return float64(top+ih) - v/maxY*float64(ih) }
	for i := 0; i <= 5; i++ {
		yv := maxY * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, py(yv), w-20, py(yv))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.0f</text>`+"\n", left-4, py(yv)+4, yv)
	}
	fmt.Fprintf(&b, `<text x="20" y="%d" text-anchor="middle" transform="rotate(-90 20 %d)">requests/s</text>`+"\n", top+ih/2, top+ih/2)
	x := left + gap/2
	for _, g := range groups {
		gx := x
		for _, br := range bars[g] {
			fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %s: %.0f req/s</title></rect>`+"\n",
				x, py(br.rps), bw-2, float64(top+ih)-py(br.rps), modeColor[br.mode], g, br.mode, br.rps)
			// The value above the bar, so the small ones (CGI) read too.
			lx, ly := float64(x)+float64(bw)/2+3, py(br.rps)-4
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="9" transform="rotate(-90 %.1f %.1f)">%.0f</text>`+"\n", lx, ly, lx, ly, br.rps)
			x += bw
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (gx+x)/2, top+ih+16, html.EscapeString(g))
		x += gap
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, top+ih, w-20, top+ih)
	lx := left
	for _, m := range Modes {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			lx, top+ih+30, modeColor[m], lx+16, top+ih+40, m)
		lx += 40 + 8*len(m)
	}
	fmt.Fprintf(&b, `<text x="20" y="%d" fill="#555">%s</text>`+"\n", h-10, html.EscapeString(r.machineLine()))
	b.WriteString("</svg>\n")
	return []byte(b.String())
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
