package load

import (
	"strings"
	"testing"
	"time"
)

// TestTimeline: slices of several windows add their answers and slow
// answers and keep the largest latency; each line starts at its slice's
// wall-clock time; a last, partial slice is kept.
func TestTimeline(t *testing.T) {
	start := time.Date(2026, 11, 24, 23, 14, 42, 400_000_000, time.UTC)
	r := &Result{Start: start, Windows: []Window{
		{Count: 10, Max: 50, Slow: 0},
		{Count: 20, Max: 3000, Slow: 6},
		{Count: 5, Max: 100, Slow: 0},
	}}
	got := Timeline(r, 2*WindowLen)
	want := [][]string{
		{"23:14:42.4 +  0.0s", " 30 answers", " 6 over 2 ms (20.00%)", "max 3.000 ms"},
		{"23:14:42.6 +  0.2s", " 5 answers", " 0 over 2 ms ( 0.00%)", "max 0.100 ms"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d: %q", len(got), len(want), got)
	}
	for i, parts := range want {
		for _, p := range parts {
			if !strings.Contains(got[i], p) {
				t.Errorf("line %d %q lacks %q", i, got[i], p)
			}
		}
	}
	if n := len(Timeline(r, WindowLen/2)); n != 3 {
		t.Errorf("slices shorter than a window: %d lines, want one per window (3)", n)
	}
}
