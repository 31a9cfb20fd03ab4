package core

import (
	"errors"
	"sync"
	"time"
)

// DevClock is the demo and test clock (exchanged -dev-clock): the system
// clock moved forward by an offset that Set changes, so that a demo or a
// test can trade on one day and then be on the next. Its time runs on
// from where it was set and never goes back.
type DevClock struct {
	mu     sync.Mutex
	offset int64 // ms added to the system clock
	last   int64 // the latest time Now returned
}

// ErrClockBack: Set was asked to move the clock back.
var ErrClockBack = errors.New("core: the clock only moves forward")

// Now returns the clock's time in Unix milliseconds.
func (c *DevClock) Now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = max(c.last, time.Now().UnixMilli()+c.offset)
	return c.last
}

// Set moves the clock to ms, which must not be before its time now.
func (c *DevClock) Set(ms int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now().UnixMilli()
	if ms < max(c.last, now+c.offset) {
		return ErrClockBack
	}
	c.offset, c.last = ms-now, ms
	return nil
}
