package report

import (
	"fmt"
	"math"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Mark is a horizontal reference line (a latency target).
type Mark struct {
	Ms    float64
	Label string
}

// Series is one latency-by-percentile curve.
type Series struct {
	Name   string
	Dashed bool
	Points []Point
}

// Point is the latency (ms) at a percentile (0..100).
type Point struct {
	Percentile float64
	Ms         float64
}

// SeriesFromHist reads h (values in µs) into a curve.
func SeriesFromHist(name string, h *hdrhistogram.Histogram) Series {
	s := Series{Name: name}
	if h.TotalCount() == 0 {
		return s
	}
	for _, b := range h.CumulativeDistributionWithTicks(5) {
		s.Points = append(s.Points, Point{Percentile: b.Quantile, Ms: float64(b.ValueAt) / 1000})
	}
	return s
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#393b79", "#637939"}

// nines maps a percentile to the plot's x axis: 0 at 0%, 1 at 90%, 2 at 99%...
func nines(p float64) float64 {
	if p >= 100 {
		return math.Inf(1)
	}
	return -math.Log10(1 - p/100)
}

// PercentilePlot draws the curves as an SVG: x is the percentile on the
// usual HdrHistogram "nines" scale, y the latency in ms on a log scale.
func PercentilePlot(title string, series []Series, marks ...Mark) string {
	const (
		width, height = 960, 540
		left, right   = 70, 230
		top, bottom   = 40, 50
	)
	pw, ph := float64(width-left-right), float64(height-top-bottom)
	xmax := 2.0
	ymin, ymax := math.Inf(1), 0.0
	for _, s := range series {
		for _, p := range s.Points {
			if x := nines(p.Percentile); !math.IsInf(x, 1) && x > xmax {
				xmax = x
			}
			if p.Ms > 0 {
				ymin = math.Min(ymin, p.Ms)
			}
			ymax = math.Max(ymax, p.Ms)
		}
	}
	xmax = math.Min(math.Ceil(xmax), 6)
	for _, m := range marks {
		ymin, ymax = math.Min(ymin, m.Ms), math.Max(ymax, m.Ms)
	}
	if math.IsInf(ymin, 1) {
		ymin, ymax = 0.01, 1
	}
	lo := math.Floor(math.Log10(ymin))
	hi := math.Ceil(math.Log10(ymax))
	if hi <= lo {
		hi = lo + 1
	}
	px := func(x float64) float64 { return float64(left) + math.Min(x, xmax)/xmax*pw }
	py := func(ms float64) float64 {
		if ms <= 0 {
			ms = ymin
		}
		return float64(top) + (hi-math.Log10(ms))/(hi-lo)*ph
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, xmlEscape(title))
	// Grid and axes.
	for d := lo; d <= hi; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > hi+1e-9 {
				continue
			}
			y := py(v)
			stroke := "#eee"
			if m == 1 {
				stroke = "#ccc"
			}
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", left, y, float64(left)+pw, y, stroke)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, msLabel(v))
		}
	}
	for i := 0; i <= int(xmax); i++ {
		x := px(float64(i))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#ccc"/>`+"\n", x, top, x, float64(top)+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, float64(top)+ph+18, ninesLabel(i))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">percentile</text>`+"\n", float64(left)+pw/2, height-8)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">latency (ms, log scale)</text>`+"\n", float64(top)+ph/2, float64(top)+ph/2)
	for _, m := range marks {
		y := py(m.Ms)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000" stroke-dasharray="2 3"/>`+"\n", left, y, float64(left)+pw, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11">%s</text>`+"\n", left+4, y-3, xmlEscape(m.Label))
	}
	// Curves and legend.
	for i, s := range series {
		color := palette[i%len(palette)]
		var pts []string
		for _, p := range s.Points {
			x := nines(p.Percentile)
			if math.IsInf(x, 1) {
				x = xmax
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(x), py(p.Ms)))
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8"%s points="%s"/>`+"\n", color, dash, strings.Join(pts, " "))
		}
		ly := top + 10 + i*18
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"%s/>`+"\n", width-right+12, ly, width-right+36, ly, color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", width-right+42, ly+4, xmlEscape(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func msLabel(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%g ms", v)
	}
	return fmt.Sprintf("%g µs", v*1000)
}

func ninesLabel(i int) string {
	switch i {
	case 0:
		return "0%"
	case 1:
		return "90%"
	}
	return strings.TrimSuffix("99."+strings.Repeat("9", i-2), ".") + "%"
}

func xmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}
