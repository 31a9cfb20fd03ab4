package edge

import (
	"sync"
)

// windowMs is the rate limit window (docs/API.md, "Rate limits"): fixed 10 s windows aligned
// to the Unix epoch.
const windowMs = 10_000

// limiter counts request weight per key in the current fixed window. A
// request over budget is refused and not counted.
type limiter struct {
	mu     sync.Mutex // guards window and used
	window int64
	used   map[uint64]int64
}

func newLimiter() *limiter { return &limiter{used: make(map[uint64]int64)} }

// take adds w to key's weight if that stays within budget. It returns the
// weight used after the call, whether it was allowed, and when refused the
// seconds until the window ends.
func (l *limiter) take(key uint64, w, budget, nowMs int64) (used int64, ok bool, retryAfter int64) {
	win := nowMs / windowMs
	l.mu.Lock()
	if win != l.window {
		l.window = win
		clear(l.used)
	}
	u := l.used[key]
	if u+w > budget {
		l.mu.Unlock()
		ms := (win+1)*windowMs - nowMs
		return u, false, (ms + 999) / 1000
	}
	u += w
	l.used[key] = u
	l.mu.Unlock()
	return u, true, 0
}

// ipKey packs a remote address into a map key.
func ipKey(ip []byte) uint64 {
	if len(ip) == 16 && isV4Mapped(ip) {
		ip = ip[12:]
	}
	if len(ip) == 4 {
		return uint64(ip[0])<<24 | uint64(ip[1])<<16 | uint64(ip[2])<<8 | uint64(ip[3])
	}
	h := uint64(14695981039346656037) // FNV-1a for IPv6
	for _, b := range ip {
		h ^= uint64(b)
		h *= 1099511628211
	}
	return h | 1<<63
}

func isV4Mapped(ip []byte) bool {
	for i := 0; i < 10; i++ {
		if ip[i] != 0 {
			return false
		}
	}
	return ip[10] == 0xff && ip[11] == 0xff
}
