package sim

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Plot is one SVG line chart: a measure against load, a line per policy.
type Plot struct {
	Title, YLabel string
	Measure       string // a Cell.Mean key
	LogY          bool
	// Refs are horizontal reference lines (the bounds), by label.
	Refs []Ref
}

// Ref is a labelled horizontal line.
type Ref struct {
	Label string
	Y     float64
}

// Plots are the sweep's figures: TTFT p90 and hit rate against load.
func Plots(res Results) map[string]Plot {
	return map[string]Plot{
		"ttft_p90.svg": {Title: "TTFT p90 against offered load", YLabel: "TTFT p90 (s, log scale)", Measure: "ttft_p90_s", LogY: true},
		"hit_rate.svg": {Title: "Prefix hit rate against offered load", YLabel: "prefix hit rate", Measure: "hit_rate",
			Refs: []Ref{{"infinite cache", res.Bounds.InfiniteHitRate}, {"pooled LRU", res.Bounds.PooledLRUHitRate}}},
	}
}

// palette: one colour per policy, by order of first appearance.
var palette = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#bcbd22"}

// WriteSVG draws p over res's summary as a self-contained SVG.
func WriteSVG(w io.Writer, res Results, p Plot) error {
	const W, H, left, right, top, bottom = 760, 440, 70, 170, 40, 50
	var policies []string
	series := map[string][][2]float64{}
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, c := range res.Summary {
		y := c.Mean[p.Measure]
		if p.LogY && y <= 0 {
			continue
		}
		if _, ok := series[c.Policy]; !ok {
			policies = append(policies, c.Policy)
		}
		series[c.Policy] = append(series[c.Policy], [2]float64{c.Load, y})
		xlo, xhi, ylo, yhi = min(xlo, c.Load), max(xhi, c.Load), min(ylo, y), max(yhi, y)
	}
	for _, r := range p.Refs {
		ylo, yhi = min(ylo, r.Y), max(yhi, r.Y)
	}
	if len(policies) == 0 {
		return fmt.Errorf("plot %q: no data", p.Title)
	}
	if xhi == xlo {
		xlo, xhi = xlo-0.1, xhi+0.1
	}
	fy := func(y float64) float64 { return y }
	if p.LogY {
		fy = math.Log10
		ylo, yhi = math.Pow(10, math.Floor(math.Log10(ylo))), math.Pow(10, math.Ceil(math.Log10(yhi)))
	} else {
		ylo, yhi = 0, niceCeil(yhi)
	}
	if fy(yhi) == fy(ylo) {
		yhi = ylo + 1
	}
	px := func(x float64) float64 { return left + (x-xlo)/(xhi-xlo)*(W-left-right) }
	py := func(y float64) float64 { return top + (fy(yhi)-fy(y))/(fy(yhi)-fy(ylo))*(H-top-bottom) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, esc(p.Title))
	// Axes, ticks and grid.
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, H-bottom, W-right, H-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, H-bottom)
	seenX := map[float64]bool{}
	for _, pts := range series {
		for _, pt := range pts {
			if seenX[pt[0]] {
				continue
			}
			seenX[pt[0]] = true
			x := px(pt[0])
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x, top, x, H-bottom)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%g</text>`+"\n", x, H-bottom+16, pt[0])
		}
	}
	for _, t := range yTicks(ylo, yhi, p.LogY) {
		y := py(t)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, W-right, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, trimNum(t))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">offered load (prefill tokens/s over fleet prefill capacity)</text>`+"\n", (left+W-right)/2, H-12)
	fmt.Fprintf(&b, `<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">%s</text>`+"\n", (top+H-bottom)/2, (top+H-bottom)/2, esc(p.YLabel))
	for _, r := range p.Refs {
		y := py(r.Y)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black" stroke-dasharray="5,4"/>`+"\n", left, y, W-right, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f">%s %.3f</text>`+"\n", W-right+6, y+4, esc(r.Label), r.Y)
	}
	for i, pol := range policies {
		col := palette[i%len(palette)]
		var pts []string
		for _, pt := range series[pol] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(pt[0]), py(pt[1])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", col, strings.Join(pts, " "))
		for _, pt := range series[pol] {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s load %g: %.4g</title></circle>`+"\n", px(pt[0]), py(pt[1]), col, esc(pol), pt[0], pt[1])
		}
		ly := top + 10 + 18*i
		if len(p.Refs) > 0 {
			ly += 18 * 3
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", W-right+6, ly, W-right+26, ly, col)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", W-right+30, ly+4, esc(pol))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string { return html.EscapeString(s) }

func niceCeil(y float64) float64 {
	if y <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(y)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= y {
			return m * p
		}
	}
	return 10 * p
}

func yTicks(lo, hi float64, log bool) []float64 {
	var out []float64
	if log {
		for t := lo; t <= hi*1.0001; t *= 10 {
			out = append(out, t)
		}
		return out
	}
	for i := range 6 {
		out = append(out, lo+(hi-lo)*float64(i)/5)
	}
	return out
}

func trimNum(t float64) string { return strings.TrimSuffix(fmt.Sprintf("%g", t), ".0") }
