package edge

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// limitListener wraps the REST and admin listeners. It does two things
// with the connections it hands out:
//
//   - It refuses connections beyond perIP open ones from one IP address
//     (closed at once). This replaces fasthttp's MaxConnsPerIP, whose
//     connection wrapper is returned to a pool on Close and so races with
//     Server.Shutdown closing idle connections (nil Conn dereference seen
//     with fasthttp v1.74.0).
//   - It keeps their read and write deadlines itself. fasthttp sets two read
//     deadlines and one write deadline per request (its IdleTimeout,
//     ReadTimeout and WriteTimeout), and each is a change to a runtime
//     timer. A limitConn only records the deadline it is given. While any
//     connection is open, one goroutine looks at all of them every
//     deadlineTick, and gives a connection whose deadline has passed a real
//     deadline in the past. That fails its blocked read or write with the
//     same timeout error the runtime's timer would have given, at most
//     deadlineTick late. Three timer changes per request were a
//     measurable share of the server's CPU under load (bench/LOG.md).
type limitListener struct {
	net.Listener
	perIP int
	epoch time.Time // deadlines are kept as nanoseconds since epoch (monotonic)

	mu       sync.Mutex // guards open, conns and sweeping
	open     map[string]int
	conns    map[*limitConn]struct{}
	sweeping bool
}

// deadlineTick is how late a connection's deadline may be enforced; the
// server's timeouts are 10 s and more.
const deadlineTick = 250 * time.Millisecond

// expired marks a deadline the sweep has handed to the connection: its
// socket now has a real deadline in the past.
const expired = -1

// past is the real deadline the sweep sets.
var past = time.Unix(1, 0)

func newLimitListener(l net.Listener, perIP int) *limitListener {
	return &limitListener{Listener: l, perIP: perIP, epoch: time.Now(), open: map[string]int{}, conns: map[*limitConn]struct{}{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := ""
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			ip = string(a.IP)
		}
		l.mu.Lock()
		if l.open[ip] >= l.perIP {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.open[ip]++
		lc := &limitConn{Conn: c, l: l, ip: ip}
		l.conns[lc] = struct{}{}
		start := !l.sweeping
		l.sweeping = true
		l.mu.Unlock()
		if start {
			go l.sweep()
		}
		return lc, nil
	}
}

// sweep enforces the connections' deadlines every deadlineTick until no
// connection is open.
func (l *limitListener) sweep() {
	t := time.NewTicker(deadlineTick)
	defer t.Stop()
	for range t.C {
		now := int64(time.Since(l.epoch))
		l.mu.Lock()
		if len(l.conns) == 0 {
			l.sweeping = false
			l.mu.Unlock()
			return
		}
		for c := range l.conns {
			c.expire(now)
		}
		l.mu.Unlock()
	}
}

type limitConn struct {
	net.Conn
	l      *limitListener
	ip     string
	rd, wd atomic.Int64 // deadlines: ns since l.epoch, 0 none, or expired
	once   sync.Once
}

func (c *limitConn) SetReadDeadline(t time.Time) error {
	if c.rd.Swap(c.since(t)) == expired {
		return c.Conn.SetReadDeadline(time.Time{}) // the new deadline is kept here
	}
	return nil
}

func (c *limitConn) SetWriteDeadline(t time.Time) error {
	if c.wd.Swap(c.since(t)) == expired {
		return c.Conn.SetWriteDeadline(time.Time{})
	}
	return nil
}

func (c *limitConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// since returns t as kept in rd and wd.
func (c *limitConn) since(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(int64(t.Sub(c.l.epoch)), 1)
}

// expire gives the socket a past read or write deadline where rd or wd has
// passed.
func (c *limitConn) expire(now int64) {
	expireOne(c.Conn, &c.rd, now, net.Conn.SetReadDeadline)
	expireOne(c.Conn, &c.wd, now, net.Conn.SetWriteDeadline)
}

// expireOne gives conn a past deadline through set if d has passed by now.
// A new deadline set meanwhile is honoured: the connection's goroutine
// swaps it in and clears the socket's deadline if it finds expired, and
// expireOne clears it if it finds the new one, so whichever of the two
// comes second clears it. A read or write that failed in between had
// reached its old deadline.
func expireOne(conn net.Conn, d *atomic.Int64, now int64, set func(net.Conn, time.Time) error) {
	v := d.Load()
	if v <= 0 || v > now || !d.CompareAndSwap(v, expired) {
		return
	}
	set(conn, past)
	if d.Load() != expired {
		set(conn, time.Time{})
	}
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.l.open[c.ip]--; c.l.open[c.ip] <= 0 {
			delete(c.l.open, c.ip)
		}
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return err
}
