package replica

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// inbox is a Handler that records what it is given.
type inbox struct {
	mu          sync.Mutex
	msgs        []raftpb.Message
	unreachable int
	got         chan struct{}
}

func newInbox() *inbox { return &inbox{got: make(chan struct{}, 1024)} }

func (b *inbox) Deliver(msgs []raftpb.Message) {
	b.mu.Lock()
	b.msgs = append(b.msgs, msgs...)
	b.mu.Unlock()
	b.got <- struct{}{}
}

func (b *inbox) Unreachable(uint64) {
	b.mu.Lock()
	b.unreachable++
	b.mu.Unlock()
}

func (b *inbox) SnapshotSent(uint64, bool) {}

func (b *inbox) count() (int, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.msgs), b.unreachable
}

// pair starts transports 1 and 2, member 2 with secret2.
func pair(t *testing.T, secret2 []byte) (*Transport, *inbox, *Transport, *inbox) {
	l1, _ := net.Listen("tcp", "127.0.0.1:0")
	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	cfg := func(id uint64, ln net.Listener, peer uint64, addr string, secret []byte) TransportConfig {
		return TransportConfig{ID: id, Listener: ln, Peers: map[uint64]string{peer: addr}, Secret: secret, DialTimeout: 500 * time.Millisecond}
	}
	t1, err := Listen(cfg(1, l1, 2, l2.Addr().String(), testSecret))
	if err != nil {
		t.Fatal(err)
	}
	t2, err := Listen(cfg(2, l2, 1, l1.Addr().String(), secret2))
	if err != nil {
		t.Fatal(err)
	}
	b1, b2 := newInbox(), newInbox()
	t1.Serve(b1)
	t2.Serve(b2)
	t.Cleanup(func() { t1.Close(); t2.Close() })
	return t1, b1, t2, b2
}

func heartbeats(from, to uint64, n int) []raftpb.Message {
	var ms []raftpb.Message
	for i := 0; i < n; i++ {
		ms = append(ms, raftpb.Message{Type: raftpb.MsgHeartbeat, From: from, To: to, Term: uint64(i + 1)})
	}
	return ms
}

func waitMsgs(t *testing.T, b *inbox, n int) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if got, _ := b.count(); got >= n {
			return
		}
		if time.Now().After(deadline) {
			got, _ := b.count()
			t.Fatalf("%d of %d messages delivered", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestTransportDelivers is the control for the refusals below: with the
// same secret, messages arrive in order, batched into few frames.
func TestTransportDelivers(t *testing.T) {
	t1, _, _, b2 := pair(t, testSecret)
	t1.Send(heartbeats(1, 2, 1))
	waitMsgs(t, b2, 1)
	t1.Send(heartbeats(1, 2, 500))
	waitMsgs(t, b2, 501)
	b2.mu.Lock()
	defer b2.mu.Unlock()
	for i, m := range b2.msgs[1:] {
		if m.Term != uint64(i+1) || m.From != 1 || m.To != 2 {
			t.Fatalf("message %d: %+v", i, m)
		}
	}
	if frames := len(b2.got); frames >= 500 {
		t.Fatalf("500 messages queued at once took %d frames", frames)
	}
}

// TestTransportWrongSecret: a peer with another secret gets nothing
// delivered, in either direction.
func TestTransportWrongSecret(t *testing.T) {
	t1, b1, t2, b2 := pair(t, []byte("another secret, 16+ bytes long"))
	for i := 0; i < 5; i++ {
		t1.Send(heartbeats(1, 2, 1))
		t2.Send(heartbeats(2, 1, 1))
		time.Sleep(100 * time.Millisecond)
	}
	if n, u := b2.count(); n != 0 {
		t.Fatalf("member 2 (wrong secret) received %d messages", n)
	} else if _, u1 := b1.count(); u1 == 0 || u == 0 {
		t.Fatalf("dials with the wrong secret were not reported unreachable (%d, %d)", u1, u)
	}
	if n, _ := b1.count(); n != 0 {
		t.Fatalf("member 1 received %d messages from a member with the wrong secret", n)
	}
}

// rawDial runs the dialer's handshake by hand as member from, proving the
// secret given; it returns the connection and the session key.
func rawDial(t *testing.T, addr string, from, to uint64, secret []byte) (net.Conn, []byte) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(2 * time.Second))
	cn := make([]byte, nonceLen)
	rand.Read(cn)
	hello := append([]byte(handshakeMagic), make([]byte, 16)...)
	binary.BigEndian.PutUint64(hello[8:], from)
	binary.BigEndian.PutUint64(hello[16:], to)
	hello = append(hello, cn...)
	c.Write(hello)
	reply := make([]byte, nonceLen+macLen)
	if _, err := io.ReadFull(c, reply); err != nil {
		t.Fatal(err)
	}
	sn := reply[:nonceLen]
	c.Write(handshakeMAC(secret, "client", from, to, cn, sn))
	return c, handshakeMAC(secret, "session", from, to, cn, sn)
}

// closedByPeer reports whether the listener closed c.
func closedByPeer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	return err == io.EOF
}

func rawFrame(c net.Conn, key []byte, frameNo uint64, msgs []raftpb.Message, tamper bool) {
	var batch []outMsg
	for _, m := range msgs {
		b, _ := m.Marshal()
		batch = append(batch, outMsg{b: b})
	}
	w := bufio.NewWriter(c)
	if tamper {
		key = append([]byte(nil), key...)
		key[0] ^= 1
	}
	writeFrame(w, key, frameNo, batch)
	w.Flush()
}

// TestTransportRefusesForgeries: the listener closes a connection whose
// handshake proof is wrong, whose frame MAC is wrong or replays a frame
// number, or which speaks for another member; only the honest frame is
// delivered.
func TestTransportRefusesForgeries(t *testing.T) {
	t1, b1, _, _ := pair(t, testSecret)
	addr := t1.Addr().String()

	c, _ := rawDial(t, addr, 2, 1, []byte("not the secret at all, no"))
	if !closedByPeer(c) {
		t.Fatal("a wrong handshake proof was not refused")
	}
	c.Close()

	c, key := rawDial(t, addr, 2, 1, testSecret)
	rawFrame(c, key, 0, heartbeats(2, 1, 1), false)
	waitMsgs(t, b1, 1)
	rawFrame(c, key, 0, heartbeats(2, 1, 1), false) // replayed frame number
	if !closedByPeer(c) {
		t.Fatal("a replayed frame was not refused")
	}
	c.Close()

	c, key = rawDial(t, addr, 2, 1, testSecret)
	rawFrame(c, key, 0, heartbeats(2, 1, 1), true)
	if !closedByPeer(c) {
		t.Fatal("a frame with a bad MAC was not refused")
	}
	c.Close()

	c, key = rawDial(t, addr, 2, 1, testSecret)
	rawFrame(c, key, 0, heartbeats(3, 1, 1), false)
	if !closedByPeer(c) {
		t.Fatal("a message speaking for another member was not refused")
	}
	c.Close()

	c, _ = rawDial(t, addr, 2, 1, testSecret)
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(t1.cfg.MaxFrame+1))
	c.Write(hdr[:])
	if !closedByPeer(c) {
		t.Fatal("an oversized frame was not refused")
	}
	c.Close()

	if n, _ := b1.count(); n != 1 {
		t.Fatalf("%d messages delivered, want only the honest one", n)
	}
}
