package edge

import (
	"net"
	"sync"
)

// limitListener refuses connections beyond perIP open ones from one IP
// address (closed at once). It replaces fasthttp's MaxConnsPerIP, whose
// connection wrapper is returned to a pool on Close and so races with
// Server.Shutdown closing idle connections (nil Conn dereference seen with
// fasthttp v1.74.0).
type limitListener struct {
	net.Listener
	perIP int
	mu    sync.Mutex // guards open
	open  map[string]int
}

func newLimitListener(l net.Listener, perIP int) *limitListener {
	return &limitListener{Listener: l, perIP: perIP, open: map[string]int{}}
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
		l.mu.Unlock()
		return &limitConn{Conn: c, l: l, ip: ip}, nil
	}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	ip   string
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.l.open[c.ip]--; c.l.open[c.ip] <= 0 {
			delete(c.l.open, c.ip)
		}
		c.l.mu.Unlock()
	})
	return err
}
