package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rawHTTP sends raw on a new connection to addr (host:port) and returns
// the first response and whether the server closed the connection after
// it (a second request on it gets no answer).
func rawHTTP(t *testing.T, addr, raw string) (*http.Response, []byte, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response to %q: %v", raw, err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	// Whatever the server did not read as this request must not be served.
	io.WriteString(c, "GET /api/v3/time HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(time.Second))
	_, err = http.ReadResponse(br, nil)
	return res, body, err != nil
}

// TestAmbiguousHTTP: requests two HTTP parsers could read two ways are
// answered 400 with a JSON error and their connection closed, so that
// bytes after them are never served as another request.
func TestAmbiguousHTTP(t *testing.T) {
	s := startServer(t, "")
	addr := strings.TrimPrefix(s.rest, "http://")
	before := s.stateHash()
	smuggled := "GET /api/v3/ping HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, c := range []struct{ name, raw string }{
		{"Content-Length with Transfer-Encoding", "POST /api/v3/order HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
			"Content-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled},
		{"Transfer-Encoding with Content-Length", "POST /api/v3/order HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" +
			"Content-Length: 5\r\n\r\n0\r\n\r\n" + smuggled},
		{"Content-Length twice", "POST /api/v3/order HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}" + smuggled},
		{"Transfer-Encoding not chunked", "POST /api/v3/order HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n" + smuggled},
		{"folded header", "GET /api/v3/time HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n Content-Length: 40\r\n\r\n" + smuggled},
	} {
		res, body, closed := rawHTTP(t, addr, c.raw)
		var e apiErr
		if res.StatusCode != 400 || json.Unmarshal(body, &e) != nil || e.Code == 0 {
			t.Errorf("%s: got %d %s, want 400 and a JSON error", c.name, res.StatusCode, body)
		}
		if !closed {
			t.Errorf("%s: the connection stayed open: the bytes after it could be served as a request", c.name)
		}
	}
	if after := s.stateHash(); after != before {
		t.Errorf("state hash changed by ambiguous requests: %s -> %s", before, after)
	}
}

// TestIdleConnectionsEvicted: clients holding the server's maximum of idle
// keep-alive connections from several addresses do not lock a well-behaved
// client out: past 90% of the bound the idle ones are closed, oldest
// first. A connection over the per-address bound gets a JSON 429.
func TestIdleConnectionsEvicted(t *testing.T) {
	s := startServer(t, "", "-max-conns", "60", "-max-conns-per-ip", "20")
	port := strings.Split(strings.TrimPrefix(s.rest, "http://"), ":")[1]
	var hogs []net.Conn
	defer func() {
		for _, c := range hogs {
			c.Close()
		}
	}()
	for a := 2; a <= 4; a++ { // 3 addresses × 20: the whole bound
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(a))}}
		for i := 0; i < 20; i++ {
			c, err := d.Dial("tcp", "127.0.0.1:"+port)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(c, "GET /api/v3/ping HTTP/1.1\r\nHost: x\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if res, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || res.StatusCode != 200 {
				t.Fatalf("hog %d.%d: %v %v", a, i, res, err)
			}
			hogs = append(hogs, c) // kept open and idle
		}
	}
	// One more from a hog's address: over its bound.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	c, err := d.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET /api/v3/ping HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	c.Close()
	if err != nil || res.StatusCode != 429 {
		t.Fatalf("a 21st connection from one address: %v %v, want 429", res, err)
	}
	body, _ := io.ReadAll(res.Body)
	var e apiErr
	if json.Unmarshal(body, &e) != nil || e.Code != -1003 {
		t.Fatalf("the 429's body %q: want a JSON error -1003", body)
	}
	time.Sleep(1500 * time.Millisecond) // the hogs are idle for over a second
	for i := 0; i < 30; i++ {           // new connections, one request each
		res, body, _ := rawHTTP(t, "127.0.0.1:"+port, "GET /api/v3/time HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if res.StatusCode != 200 {
			t.Fatalf("well-behaved request %d while others hold idle connections: %d %s", i, res.StatusCode, body)
		}
	}
}

// TestAdminBeyondLoopbackNeedsToken: the demo config's admin token is
// public, so exchanged refuses to listen for the admin API beyond this
// machine with it.
func TestAdminBeyondLoopbackNeedsToken(t *testing.T) {
	cmd := exec.Command(binPath, "-data", t.TempDir(), "-listen", "127.0.0.1:0", "-admin-listen", "0.0.0.0:0")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "-admin-token") {
		t.Fatalf("exchanged -admin-listen 0.0.0.0:0 on the demo config: %v\n%s", err, out)
	}
	cmd = exec.Command(binPath, "-data", t.TempDir(), "-listen", "127.0.0.1:0", "-admin-listen", "0.0.0.0:0", "-admin-token", "s3cret")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if readyRE.MatchString(sc.Text()) {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			return
		}
	}
	t.Fatal("with -admin-token it did not start")
}

// TestDiskFullServer: the real server on a small tmpfs. When the disk
// fills, orders are answered 503 -1054 and not acknowledged, history
// reads go on; once space returns the server exits with status 75 for its
// supervisor, and a restart holds every order acknowledged before.
func TestDiskFullServer(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "mnt")
	os.MkdirAll(mnt, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=160m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs for a full disk here (%v: %s)", err, out)
	}
	defer exec.Command("umount", "-l", mnt).Run()
	dir := filepath.Join(mnt, "data")
	s := startServer(t, dir)
	var acked []int64
	place := func(i int) resp {
		return s.do(req{method: "POST", path: "/api/v3/order", u: &userA,
			body: placeBody("BTCUSDT", "BUY", "LIMIT", "0.01", fmt.Sprint(10000+i), "")})
	}
	for i := 0; i < 20; i++ {
		var o order
		json.Unmarshal(place(i).body, &o)
		acked = append(acked, o.OrderID)
	}
	filler := filepath.Join(mnt, "filler")
	f, _ := os.Create(filler)
	for chunk := make([]byte, 1<<20); ; {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	refused := 0
	for i := 20; i < 400 && refused == 0; i++ {
		r := place(i)
		switch r.status {
		case 200:
			var o order
			json.Unmarshal(r.body, &o)
			acked = append(acked, o.OrderID)
		case 503:
			var e apiErr
			if json.Unmarshal(r.body, &e) != nil || e.Code != -1054 {
				t.Fatalf("order on a full disk: %s, want a JSON -1054", r.body)
			}
			refused++
		default:
			t.Fatalf("order on a full disk: %d %s", r.status, r.body)
		}
		time.Sleep(5 * time.Millisecond) // the store checks the free space every 250 ms
	}
	if refused == 0 {
		t.Fatal("no order refused on a full disk")
	}
	if r := s.do(req{method: "GET", path: "/api/v3/myTrades?symbol=BTCUSDT", u: &userA}); r.status != 200 {
		t.Errorf("history read after the failure: %d %s", r.status, r.body)
	}
	os.Remove(filler)
	select {
	case err := <-s.exited:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 75 {
			t.Fatalf("exit after space returned: %v, want status 75\n%s", err, s.log)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("still running 20 s after space returned\n%s", s.log)
	}
	s = startServer(t, dir)
	var open []order
	s.get(&userA, "/api/v3/openOrders?symbol=BTCUSDT", &open)
	have := map[int64]bool{}
	for _, o := range open {
		have[o.OrderID] = true
	}
	for _, id := range acked {
		if !have[id] {
			t.Errorf("acknowledged order %d missing after the restart", id)
		}
	}
	s.stop() // before the tmpfs goes
	t.Logf("%d orders acknowledged before the disk filled; all there after the restart", len(acked))
}
