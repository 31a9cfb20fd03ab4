package load

import (
	"fmt"
	"os"
	"strconv"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

func formatFloat(f float64, prec int) string { return strconv.FormatFloat(f, 'f', prec, 64) }

// FormatLatency writes d in milliseconds with three decimals (µs resolution).
func FormatLatency(d time.Duration) string {
	return formatFloat(float64(d.Microseconds())/1000, 3)
}

// StepHeader is the column header of StepLine.
func StepHeader() string {
	return fmt.Sprintf("%9s %9s %8s %8s %8s %9s %9s %9s %9s %9s", "offered/s", "achieved", "ok", "reject", "failed", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "unsent")
}

// StepLine is a one-line summary of r.
func StepLine(r *Result) string {
	return fmt.Sprintf("%9.0f %9.0f %8d %8d %8d %9s %9s %9s %9s %9d", r.Rate, r.Achieved(), r.OK, r.Rejected, r.Failed,
		FormatLatency(r.Percentile(50)), FormatLatency(r.Percentile(99)), FormatLatency(r.Percentile(99.9)),
		FormatLatency(r.Max()), r.Unsent)
}

// FormatProgress is a one-line progress report.
func FormatProgress(p Progress) string {
	return fmt.Sprintf("%.0f/s t=%4.1fs due=%d sent=%d done=%d in-flight=%d failed=%d max=%sms",
		p.Rate, p.Elapsed.Seconds(), p.Due, p.Sent, p.Done, p.Sent-p.Done, p.Failed, FormatLatency(p.MaxLatency))
}

// Timeline is r's timeline in slices of per (a multiple of WindowLen),
// one line each: the slice's wall-clock start (to set against server.log),
// its answers, how many took over SlowUs, and the largest latency.
func Timeline(r *Result, per time.Duration) []string {
	n := max(1, int(per/WindowLen))
	var lines []string
	for k, w := range r.Slices(per) {
		at := r.Start.Add(time.Duration(k*n) * WindowLen)
		lines = append(lines, fmt.Sprintf("%s +%5.1fs %8d answers %7d over %d ms (%5.2f%%) max %s ms",
			at.Format("15:04:05.0"), at.Sub(r.Start).Seconds(), w.Count, w.Slow, SlowUs/1000,
			w.SlowPercent(), FormatLatency(time.Duration(w.Max)*time.Microsecond)))
	}
	return lines
}

// WriteHgrm writes h's percentile distribution in the HdrHistogram text
// format (values in milliseconds), readable by the HdrHistogram plotter.
func WriteHgrm(name string, h *hdrhistogram.Histogram) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := h.PercentilesPrint(f, 5, 1000); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
