package core

import (
	"testing"
	"time"
)

// TestSyncPace: syncs are spaced only while commits come faster than
// paceRateOn per second, and stop being spaced below paceRateOff; the gap
// grows with the commands per second from paceLoadLow to paceLoadHigh.
func TestSyncPace(t *testing.T) {
	var p syncPace
	now := int64(time.Hour)
	p.at.Store(now)
	step := func(commits int) time.Duration {
		for i := 0; i < commits; i++ {
			p.commit(1)
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
	// The gap follows the command rate (here 4 commands per commit).
	mid := paceGap + (paceGapMax-paceGap)/2
	for _, c := range []struct {
		cmds int // per second
		want time.Duration
	}{
		{paceLoadLow, paceGap},
		{(paceLoadLow + paceLoadHigh) / 2, mid},
		{paceLoadHigh, paceGapMax},
		{4 * paceLoadHigh, paceGapMax},
		{paceLoadLow / 2, paceGap},
	} {
		for i := 0; i < perWindow(c.cmds)/4; i++ {
			p.commit(4)
		}
		now += int64(paceWindow)
		if got := p.intervalAt(now); got != c.want {
			t.Fatalf("at %d commands/s: got gap %v, want %v", c.cmds, got, c.want)
		}
		if got := p.syncGap(); got != c.want {
			t.Fatalf("at %d commands/s: the committer's gap is %v, want %v", c.cmds, got, c.want)
		}
	}
	// Unpaced, the committer (used while a shard has batches in flight)
	// keeps the smallest gap.
	p.gap.Store(0)
	if got := p.syncGap(); got != paceGap {
		t.Fatalf("unpaced: the committer's gap is %v, want %v", got, paceGap)
	}
	// Within a window the decision is not re-taken.
	p.gap.Store(int64(paceGap))
	if got := p.intervalAt(now + int64(paceWindow)/2); got != paceGap {
		t.Fatalf("mid-window: got %v, want %v", got, paceGap)
	}
}

func TestGapRamps(t *testing.T) {
	for _, c := range []struct {
		f    func(int64) time.Duration
		rate int64
		want time.Duration
	}{
		{gapFor, 0, paceGap}, {gapFor, paceLoadLow, paceGap}, {gapFor, (paceLoadLow + paceLoadHigh) / 2, (paceGap + paceGapMax) / 2},
		{gapFor, paceLoadHigh, paceGapMax}, {gapFor, 1 << 40, paceGapMax},
		{replGapFor, 500, replGapMin}, {replGapFor, 2500, time.Millisecond}, {replGapFor, 4000, replGapMax}, {replGapFor, 90000, replGapMax},
	} {
		if got := c.f(c.rate); got != c.want {
			t.Errorf("gap at %d commands/s: %v, want %v", c.rate, got, c.want)
		}
	}
}
