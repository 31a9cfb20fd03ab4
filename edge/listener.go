package edge

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// limitListener wraps the REST and admin listeners. It does two things
// with the connections it hands out:
//
//   - It bounds them: at most perIP open from one IP address and max in
//     all (max stays below the process's file limit). Past 90% of max it
//     first closes keep-alive connections idle for idleAfter or more,
//     oldest first, so that clients holding many idle connections cannot
//     lock new ones out; a connection still over a bound gets a JSON error
//     (429 -1003 per address, 503 -1054 in all) and is closed. This
//     replaces fasthttp's MaxConnsPerIP, whose connection wrapper is
//     returned to a pool on Close and so races with Server.Shutdown
//     closing idle connections (nil Conn dereference seen with fasthttp
//     v1.74.0), and its Concurrency limit, which answers in plain text.
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
	perIP, max int
	epoch      time.Time    // deadlines are kept as nanoseconds since epoch (monotonic)
	now        atomic.Int64 // ns since epoch, refreshed by the sweep: connections' last I/O
	refusing   atomic.Int32 // refusals being written

	mu       sync.Mutex // guards open, conns, sweeping and scanned
	open     map[string]int
	conns    map[*limitConn]struct{}
	sweeping bool
	scanned  int64 // l.now at the last look for idle connections
}

// scanGap spaces the looks for idle connections: each reads every
// connection, and a flood of new ones must not turn into a scan each.
const scanGap = 100 * time.Millisecond

// idleAfter is how long a connection waiting for its next request must
// have been quiet to be closed when the server nears its bound.
const idleAfter = time.Second

// deadlineTick is how late a connection's deadline may be enforced; the
// server's timeouts are 10 s and more.
const deadlineTick = 250 * time.Millisecond

// expired marks a deadline the sweep has handed to the connection: its
// socket now has a real deadline in the past.
const expired = -1

// past is the real deadline the sweep sets.
var past = time.Unix(1, 0)

func newLimitListener(l net.Listener, perIP, max int) *limitListener {
	return &limitListener{Listener: l, perIP: perIP, max: max, epoch: time.Now(), open: map[string]int{}, conns: map[*limitConn]struct{}{}}
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
		l.now.Store(int64(time.Since(l.epoch)))
		l.mu.Lock()
		if l.open[ip] >= l.perIP {
			l.mu.Unlock()
			l.refuse(c, errTooManyFromIP)
			continue
		}
		if now := l.now.Load(); len(l.conns) >= l.max*9/10 && now-l.scanned >= int64(scanGap) {
			l.scanned = now
			idle := l.idleLocked()
			l.mu.Unlock()
			for _, ic := range idle {
				ic.Close() // its blocked read fails; fasthttp drops the connection
			}
			l.mu.Lock()
		}
		if len(l.conns) >= l.max {
			l.mu.Unlock()
			l.refuse(c, errTooManyConns)
			continue
		}
		l.open[ip]++
		lc := &limitConn{Conn: c, l: l, ip: ip}
		lc.last.Store(l.now.Load())
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

// idleLocked returns the connections waiting for a next request that have
// been quiet for idleAfter, oldest first, enough to bring the count to 80%
// of max (l.mu held).
func (l *limitListener) idleLocked() []*limitConn {
	now := l.now.Load()
	var idle []*limitConn
	for c := range l.conns {
		if c.waiting.Load() && now-c.last.Load() >= int64(idleAfter) {
			idle = append(idle, c)
		}
	}
	slices.SortFunc(idle, func(a, b *limitConn) int { return cmp.Compare(a.last.Load(), b.last.Load()) })
	return idle[:min(len(idle), max(0, len(l.conns)-l.max*8/10))]
}

// refuse answers c, a connection over a bound, with e and closes it: after
// reading what it sent first (up to a second), so that the answer is not
// lost to a reset. At most 256 refusals are written at once; past that a
// connection is just closed.
func (l *limitListener) refuse(c net.Conn, e *apiError) {
	if l.refusing.Add(1) > 256 {
		l.refusing.Add(-1)
		c.Close()
		return
	}
	go func() {
		defer l.refusing.Add(-1)
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		var b [4096]byte
		c.Read(b[:])
		body := fmt.Sprintf(`{"code":%d,"msg":%q}`, e.code, e.msg)
		fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			e.status, fasthttp.StatusMessage(e.status), len(body), body)
	}()
}

// sweep enforces the connections' deadlines every deadlineTick until no
// connection is open, and refreshes l.now.
func (l *limitListener) sweep() {
	t := time.NewTicker(deadlineTick)
	defer t.Stop()
	for range t.C {
		now := int64(time.Since(l.epoch))
		l.now.Store(now)
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
	l       *limitListener
	ip      string
	rd, wd  atomic.Int64 // deadlines: ns since l.epoch, 0 none, or expired
	last    atomic.Int64 // l.now at the last byte read or written
	waiting atomic.Bool  // blocked in a read that has not yet returned data
	once    sync.Once
}

// Read and Write note when the connection last carried data, and whether
// it is waiting to read (between requests, or for the next one); a
// connection whose handler runs is neither.
func (c *limitConn) Read(b []byte) (int, error) {
	c.waiting.Store(true)
	n, err := c.Conn.Read(b)
	c.waiting.Store(false)
	if n > 0 {
		c.last.Store(c.l.now.Load())
	}
	return n, err
}

func (c *limitConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.last.Store(c.l.now.Load())
	return n, err
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
