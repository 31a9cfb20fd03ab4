package report

import (
	"fmt"
	"math"
	"strings"
)

// TimeSeries is a value over time: seconds from a step's start, ms.
type TimeSeries struct {
	Name   string
	Points []Point2
}

// Point2 is one point of a TimeSeries.
type Point2 struct{ T, Ms float64 }

// TimelinePlot draws series as an SVG: x the time in seconds, y in ms on a
// log scale. Used for the worst latency per 100 ms window, where periodic
// stalls (fsync, compaction, snapshots, GC) show as spikes.
func TimelinePlot(title string, series []TimeSeries) string {
	const (
		width, height = 960, 360
		left, right   = 70, 230
		top, bottom   = 40, 45
	)
	pw, ph := float64(width-left-right), float64(height-top-bottom)
	tmax, ymin, ymax := 1.0, math.Inf(1), 0.0
	for _, s := range series {
		for _, p := range s.Points {
			tmax = math.Max(tmax, p.T)
			if p.Ms > 0 {
				ymin = math.Min(ymin, p.Ms)
			}
			ymax = math.Max(ymax, p.Ms)
		}
	}
	if math.IsInf(ymin, 1) {
		ymin, ymax = 0.01, 1
	}
	lo, hi := math.Floor(math.Log10(ymin)), math.Ceil(math.Log10(ymax))
	if hi <= lo {
		hi = lo + 1
	}
	tmax = math.Ceil(tmax)
	px := func(t float64) float64 { return float64(left) + t/tmax*pw }
	py := func(ms float64) float64 {
		ms = math.Max(ms, ymin)
		return float64(top) + (hi-math.Log10(ms))/(hi-lo)*ph
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, xmlEscape(title))
	for d := lo; d <= hi; d++ {
		y := py(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ccc"/>`+"\n", left, y, float64(left)+pw, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, msLabel(math.Pow(10, d)))
	}
	step := math.Max(1, math.Round(tmax/10))
	for t := 0.0; t <= tmax+1e-9; t += step {
		x := px(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x, top, x, float64(top)+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%gs</text>`+"\n", x, float64(top)+ph+18, t)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">max latency per 100 ms (ms, log)</text>`+"\n", float64(top)+ph/2, float64(top)+ph/2)
	for i, s := range series {
		color := palette[i%len(palette)]
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.T), py(p.Ms)))
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		}
		ly := top + 10 + i*18
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"/>`+"\n", width-right+12, ly, width-right+36, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", width-right+42, ly+4, xmlEscape(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
