package journal

import (
	"testing"
	"time"
)

// TestSyncPace: syncs are spaced only while commits come faster than
// paceRateOn per second, and stop being spaced below paceRateOff.
func TestSyncPace(t *testing.T) {
	var p syncPace
	now := int64(time.Hour)
	p.at.Store(now)
	step := func(commits int) time.Duration {
		for i := 0; i < commits; i++ {
			p.commit()
		}
		now += int64(paceWindow)
		return p.intervalAt(now)
	}
	perWindow := func(rate int) int { return rate * int(paceWindow/time.Millisecond) / 1000 }
	for _, c := range []struct {
		rate int
		want time.Duration
	}{
		{100, 0},
		{paceRateOn - 100, 0},
		{paceRateOn + 100, paceGap},
		{8000, paceGap},
		{paceRateOff + 100, paceGap}, // between the thresholds: unchanged
		{paceRateOff - 100, 0},
		{(paceRateOn + paceRateOff) / 2, 0}, // unchanged
	} {
		if got := step(perWindow(c.rate)); got != c.want {
			t.Fatalf("at %d commits/s: got gap %v, want %v", c.rate, got, c.want)
		}
	}
	// Within a window the decision is not re-taken.
	p.gap.Store(int64(paceGap))
	if got := p.intervalAt(now + int64(paceWindow)/2); got != paceGap {
		t.Fatalf("mid-window: got %v, want %v", got, paceGap)
	}
}
