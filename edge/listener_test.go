package edge

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// pair returns both ends of a loopback TCP connection, the server's
// through l.
func pair(t *testing.T, l *limitListener) (server, client net.Conn) {
	t.Helper()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if server, err = l.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

func newTestListener(t *testing.T) *limitListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return newLimitListener(ln, 16, 1<<20)
}

// result runs f and returns its error, or fails if it does not return
// within 10 s (a deadline that was never enforced).
func result(t *testing.T, f func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("blocked 10 s past its deadline")
		return nil
	}
}

// TestListenerReadDeadline: a read blocked past its deadline fails with the
// runtime's timeout error, not before the deadline; a deadline moved later
// before it passed is not enforced; after a timeout a new deadline (or
// none) makes the connection readable again.
func TestListenerReadDeadline(t *testing.T) {
	l := newTestListener(t)
	s, c := pair(t, l)
	buf := make([]byte, 8)

	start := time.Now()
	s.SetReadDeadline(start.Add(100 * time.Millisecond))
	err := result(t, func() error { _, err := s.Read(buf); return err })
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v, want a timeout", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("timed out after %v, before the 100 ms deadline", d)
	}

	s.SetReadDeadline(time.Time{})
	if _, err := c.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Read(buf); n != 1 || err != nil {
		t.Fatalf("read after the deadline was cleared: %d, %v", n, err)
	}

	// Set a 100 ms deadline, then move it 5 s out before it passes; the
	// client writes after 3 deadline ticks.
	s.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	go func() {
		time.Sleep(3 * deadlineTick)
		c.Write([]byte("b"))
	}()
	if err := result(t, func() error { _, err := s.Read(buf); return err }); err != nil {
		t.Fatalf("read with its deadline moved later: %v", err)
	}
}

// TestListenerWriteDeadline: a write blocked on a client that does not read
// fails with a timeout.
func TestListenerWriteDeadline(t *testing.T) {
	l := newTestListener(t)
	s, _ := pair(t, l)
	s.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	chunk := make([]byte, 1<<20)
	err := result(t, func() error {
		for {
			if _, err := s.Write(chunk); err != nil {
				return err
			}
		}
	})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write past its deadline: %v, want a timeout", err)
	}
}

// TestListenerSweepStops: the deadline sweep runs only while connections
// are open.
func TestListenerSweepStops(t *testing.T) {
	l := newTestListener(t)
	s, c := pair(t, l)
	sweeping := func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.sweeping }
	if !sweeping() {
		t.Fatal("no sweep with a connection open")
	}
	s.Close()
	c.Close()
	for i := 0; sweeping(); i++ {
		if i == 100 {
			t.Fatal("sweep still running 100 ticks after the last connection closed")
		}
		time.Sleep(deadlineTick)
	}
}

// TestListenerSweepAllocs: the sweep allocates nothing per connection per
// tick.
func TestListenerSweepAllocs(t *testing.T) {
	l := newTestListener(t)
	s, _ := pair(t, l)
	c := s.(*limitConn)
	if n := testing.AllocsPerRun(100, func() { c.expire(int64(time.Since(l.epoch))) }); n != 0 {
		t.Fatalf("expire allocates %v times per call, want 0", n)
	}
}
