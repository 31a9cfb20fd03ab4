// Package report turns benchmark results into the Markdown report of
// `make bench`: parsing `go test -bench` output, Markdown tables, the
// machine description, and a hand-written SVG latency-percentile plot.
package report
