package suite

import (
	"testing"
	"time"
)

// Both sides of a Pair get half the lower saturation, whichever reports
// first; a side that leaves (or has none) gives 0 to both, and a second
// report of a side does not count.
func TestPair(t *testing.T) {
	p := NewPair()
	got := make(chan float64, 1)
	go func() { got <- p.Report(1, 845) }()
	select {
	case v := <-got:
		t.Fatalf("Report returned %v before the other side reported", v)
	case <-time.After(20 * time.Millisecond):
	}
	if v := p.Report(0, 4054); v != 423 {
		t.Errorf("side 0 got %v, want 423", v)
	}
	if v := <-got; v != 423 {
		t.Errorf("side 1 got %v, want 423", v)
	}
	p.Leave(0) // after a report: ignored
	if v := p.Report(1, 1); v != 423 {
		t.Errorf("a second report changed the rate to %v", v)
	}

	q := NewPair()
	q.Leave(0)
	if v := q.Report(1, 845); v != 0 {
		t.Errorf("with one side gone: %v, want 0", v)
	}
	var nilPair *Pair
	nilPair.Leave(0)
	if v := nilPair.Report(0, 10); v != 0 {
		t.Errorf("nil pair: %v", v)
	}
}
