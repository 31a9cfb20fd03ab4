package replica

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// Handler receives what a Transport reads and learns.
type Handler interface {
	// Deliver hands over messages read from a peer, in the order it sent
	// them. It may block: the connection is not read meanwhile.
	Deliver(msgs []raftpb.Message)
	// Unreachable reports that messages to id were dropped (no connection,
	// or its queue full).
	Unreachable(id uint64)
	// SnapshotSent reports whether a snapshot message to id was written to
	// its connection (ok) or dropped.
	SnapshotSent(id uint64, ok bool)
}

// TransportConfig configures a Transport. Zero durations and sizes take the
// defaults named.
type TransportConfig struct {
	ID     uint64
	Listen string // address to accept peers on
	// Listener, if set, is used instead of listening on Listen.
	Listener net.Listener
	Peers    map[uint64]string // every other member's address
	Secret   []byte            // shared by the members; at least 16 bytes
	// MaxFrame bounds one frame's payload, so a snapshot message must fit
	// in it (default 256 MB); a reader refuses a longer frame.
	MaxFrame int
	// QueueLen bounds the messages waiting for each peer (default 4096):
	// past it messages are dropped, and raft sends them again.
	QueueLen     int
	DialTimeout  time.Duration // default 1 s, the handshake included
	WriteTimeout time.Duration // one frame's write (default 10 s)
	// IdleTimeout: a connection with no frame for this long is closed
	// (default 10 s); writers send an empty frame after a third of it idle.
	IdleTimeout time.Duration
	Logger      *slog.Logger
}

// Transport carries raft messages between the members over TCP: one
// outbound connection per peer, on which this member writes and the peer only
// reads, so each member also accepts one inbound connection from each peer.
//
// A connection starts with a handshake in which each side proves it knows
// the shared secret (HMAC-SHA256 over both sides' random nonces and both
// members' ids, compared in constant time) and which yields a per-connection
// key. Then the dialer writes frames:
//
//	length(4, big-endian) payload(length) mac(32)
//
// where mac is HMAC-SHA256 under the connection key of the frame's number on
// the connection (8), length and payload, so a frame cannot be forged,
// altered, replayed or reordered. The payload is the count of messages, then
// each message's length and raftpb encoding (uvarints). Every write, read,
// dial and handshake has a deadline; the queues and frames are bounded.
type Transport struct {
	cfg TransportConfig
	ln  net.Listener
	h   Handler
	log *slog.Logger

	peers map[uint64]*peerConn

	mu      sync.Mutex
	inbound map[uint64]net.Conn // the current inbound connection of each peer
	conns   map[net.Conn]struct{}
	closed  bool

	stop chan struct{}
	wg   sync.WaitGroup

	nDropped, nConnects atomic.Uint64 // Stats
}

// TransportStats counts messages dropped (queue full, too large, or queued
// when a connection failed: raft sends again) and outbound connections
// made, since Listen.
type TransportStats struct {
	Dropped, Connects uint64
}

// Stats returns the transport's counters.
func (t *Transport) Stats() TransportStats {
	return TransportStats{Dropped: t.nDropped.Load(), Connects: t.nConnects.Load()}
}

type outMsg struct {
	b    []byte
	snap bool
}

type peerConn struct {
	t    *Transport
	id   uint64
	addr string
	q    chan outMsg
}

const (
	handshakeMagic = "RPLv1\x00\x00\x00"
	nonceLen       = 32
	macLen         = sha256.Size
)

// ErrAuth is the error of a handshake or frame that fails authentication.
var ErrAuth = errors.New("replica: peer failed authentication")

// Listen binds cfg.Listen; Serve starts accepting once the handler exists.
func Listen(cfg TransportConfig) (*Transport, error) {
	if len(cfg.Secret) < 16 {
		return nil, errors.New("replica: the transport secret must be at least 16 bytes")
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = 256 << 20
	}
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = 4096
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return nil, err
		}
	}
	t := &Transport{
		cfg: cfg, ln: ln, log: cfg.Logger,
		peers:   map[uint64]*peerConn{},
		inbound: map[uint64]net.Conn{},
		conns:   map[net.Conn]struct{}{},
		stop:    make(chan struct{}),
	}
	for id, addr := range cfg.Peers {
		if id == cfg.ID {
			continue
		}
		t.peers[id] = &peerConn{t: t, id: id, addr: addr, q: make(chan outMsg, cfg.QueueLen)}
	}
	return t, nil
}

// Addr is the address the transport listens on.
func (t *Transport) Addr() net.Addr { return t.ln.Addr() }

// Serve starts accepting peers and writing to them, delivering to h.
func (t *Transport) Serve(h Handler) {
	t.h = h
	t.wg.Add(1)
	go t.accept()
	for _, p := range t.peers {
		t.wg.Add(1)
		go p.run()
	}
}

// Close stops the transport and waits for its goroutines.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.stop)
	err := t.ln.Close()
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return err
}

// track registers a connection for Close; false if closing already.
func (t *Transport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *Transport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	c.Close()
}

// Send queues msgs for their peers. Each is encoded here, on the caller's
// goroutine: raft requires messages to be marshalled before it persists
// further entries, which the caller (the group's loop) does next. Messages
// to unknown peers, too large for a frame or finding their queue full are
// dropped.
func (t *Transport) Send(msgs []raftpb.Message) {
	for i := range msgs {
		m := &msgs[i]
		p, ok := t.peers[m.To]
		if !ok {
			continue
		}
		snap := m.Type == raftpb.MsgSnap
		b, err := m.Marshal()
		if err != nil || len(b)+2*binary.MaxVarintLen64 > t.cfg.MaxFrame {
			t.log.Warn("replica: message dropped", "to", m.To, "type", m.Type.String(), "bytes", len(b), "err", err)
			t.dropped(m.To, snap)
			continue
		}
		select {
		case p.q <- outMsg{b: b, snap: snap}:
		default:
			t.dropped(m.To, snap)
		}
	}
}

func (t *Transport) dropped(to uint64, snap bool) {
	t.nDropped.Add(1)
	if t.h == nil {
		return
	}
	t.h.Unreachable(to)
	if snap {
		t.h.SnapshotSent(to, false)
	}
}

func (p *peerConn) run() {
	t := p.t
	defer t.wg.Done()
	var (
		conn    net.Conn
		w       *bufio.Writer
		key     []byte
		frameNo uint64
		backoff = 50 * time.Millisecond
	)
	idle := time.NewTimer(t.cfg.IdleTimeout / 3)
	defer idle.Stop()
	closeConn := func() {
		if conn != nil {
			t.untrack(conn)
			conn = nil
		}
	}
	defer closeConn()
	var batch []outMsg
	for {
		batch = batch[:0]
		select {
		case <-t.stop:
			return
		case m := <-p.q:
			batch = append(batch, m)
		case <-idle.C:
			idle.Reset(t.cfg.IdleTimeout / 3)
			if conn == nil {
				continue
			}
		}
		if conn == nil {
			c, k, err := p.dial()
			if err != nil {
				t.log.Debug("replica: dial failed", "peer", p.id, "addr", p.addr, "err", err)
				// Whatever is queued would be stale once a connection exists:
				// drop it and let raft send again.
				p.dropAll(batch)
				select {
				case <-t.stop:
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 2*time.Second)
				continue
			}
			if !t.track(c) {
				return
			}
			conn, key, frameNo = c, k, 0
			t.nConnects.Add(1)
			w = bufio.NewWriterSize(conn, 64<<10)
			backoff = 50 * time.Millisecond
		}
		// Everything queued by now goes in this write, as far as a frame
		// holds it.
		size := 0
		for _, m := range batch {
			size += len(m.b) + binary.MaxVarintLen64
		}
	fill:
		for size < t.cfg.MaxFrame/2 {
			select {
			case m := <-p.q:
				batch = append(batch, m)
				size += len(m.b) + binary.MaxVarintLen64
			default:
				break fill
			}
		}
		conn.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout))
		err := writeFrame(w, key, frameNo, batch)
		if err == nil {
			err = w.Flush()
		}
		frameNo++
		if err != nil {
			t.log.Debug("replica: write failed", "peer", p.id, "err", err)
			closeConn()
			p.dropAll(batch)
			continue
		}
		for _, m := range batch {
			if m.snap {
				t.h.SnapshotSent(p.id, true)
			}
		}
		idle.Reset(t.cfg.IdleTimeout / 3)
	}
}

// dropAll reports batch and everything queued as dropped.
func (p *peerConn) dropAll(batch []outMsg) {
	snaps := 0
	p.t.nDropped.Add(uint64(len(batch)))
	for _, m := range batch {
		if m.snap {
			snaps++
		}
	}
	for {
		select {
		case m := <-p.q:
			p.t.nDropped.Add(1)
			if m.snap {
				snaps++
			}
			continue
		default:
		}
		break
	}
	p.t.h.Unreachable(p.id)
	for ; snaps > 0; snaps-- {
		p.t.h.SnapshotSent(p.id, false)
	}
}

func writeFrame(w *bufio.Writer, key []byte, frameNo uint64, batch []outMsg) error {
	payload := binary.AppendUvarint(nil, uint64(len(batch)))
	for _, m := range batch {
		payload = binary.AppendUvarint(payload, uint64(len(m.b)))
		payload = append(payload, m.b...)
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(payload)))
	mac := frameMAC(key, frameNo, hdr[:], payload)
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := w.Write(payload); err != nil {
		return err
	}
	_, err := w.Write(mac)
	return err
}

func frameMAC(key []byte, frameNo uint64, hdr, payload []byte) []byte {
	h := hmac.New(sha256.New, key)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], frameNo)
	h.Write(n[:])
	h.Write(hdr)
	h.Write(payload)
	return h.Sum(nil)
}

// handshake transcript: both ids and both nonces, labelled by who proves.
func handshakeMAC(secret []byte, label string, client, server uint64, cn, sn []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(label))
	var ids [16]byte
	binary.BigEndian.PutUint64(ids[:8], client)
	binary.BigEndian.PutUint64(ids[8:], server)
	h.Write(ids[:])
	h.Write(cn)
	h.Write(sn)
	return h.Sum(nil)
}

// dial connects to the peer and runs the dialer's side of the handshake:
// send magic, own id, the peer's id and a nonce; read the peer's nonce and
// its proof; send own proof.
func (p *peerConn) dial() (net.Conn, []byte, error) {
	t := p.t
	d := net.Dialer{Timeout: t.cfg.DialTimeout}
	c, err := d.Dial("tcp", p.addr)
	if err != nil {
		return nil, nil, err
	}
	c.SetDeadline(time.Now().Add(t.cfg.DialTimeout))
	cn := make([]byte, nonceLen)
	rand.Read(cn)
	hello := make([]byte, 0, 8+16+nonceLen)
	hello = append(hello, handshakeMagic...)
	hello = binary.BigEndian.AppendUint64(hello, t.cfg.ID)
	hello = binary.BigEndian.AppendUint64(hello, p.id)
	hello = append(hello, cn...)
	if _, err := c.Write(hello); err != nil {
		c.Close()
		return nil, nil, err
	}
	reply := make([]byte, nonceLen+macLen)
	if _, err := io.ReadFull(c, reply); err != nil {
		c.Close()
		return nil, nil, err
	}
	sn := reply[:nonceLen]
	want := handshakeMAC(t.cfg.Secret, "server", t.cfg.ID, p.id, cn, sn)
	if !hmac.Equal(reply[nonceLen:], want) {
		c.Close()
		return nil, nil, fmt.Errorf("%w: %s did not prove the secret", ErrAuth, p.addr)
	}
	if _, err := c.Write(handshakeMAC(t.cfg.Secret, "client", t.cfg.ID, p.id, cn, sn)); err != nil {
		c.Close()
		return nil, nil, err
	}
	c.SetDeadline(time.Time{})
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return c, handshakeMAC(t.cfg.Secret, "session", t.cfg.ID, p.id, cn, sn), nil
}

func (t *Transport) accept() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.stop:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			t.log.Warn("replica: accept failed", "err", err)
			select {
			case <-t.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if !t.track(c) {
			return
		}
		t.wg.Add(1)
		go t.serveConn(c)
	}
}

// serveConn runs the listener's side of the handshake, then reads frames.
func (t *Transport) serveConn(c net.Conn) {
	defer t.wg.Done()
	defer t.untrack(c)
	from, key, err := t.handshake(c)
	if err != nil {
		t.log.Warn("replica: refused a peer", "remote", c.RemoteAddr().String(), "err", err)
		return
	}
	t.mu.Lock()
	if old, ok := t.inbound[from]; ok {
		old.Close() // the peer reconnected; its old connection is dead to it
	}
	t.inbound[from] = c
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		if t.inbound[from] == c {
			delete(t.inbound, from)
		}
		t.mu.Unlock()
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	var frameNo uint64
	var hdr [4]byte
	var buf []byte
	for {
		c.SetReadDeadline(time.Now().Add(t.cfg.IdleTimeout))
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		if n > t.cfg.MaxFrame {
			t.log.Warn("replica: frame too large", "peer", from, "bytes", n, "max", t.cfg.MaxFrame)
			return
		}
		if cap(buf) < n+macLen {
			buf = make([]byte, n+macLen)
		}
		buf = buf[:n+macLen]
		// A large frame may take long to arrive; it gets the write timeout
		// its sender has, past the idle one.
		c.SetReadDeadline(time.Now().Add(t.cfg.IdleTimeout + t.cfg.WriteTimeout))
		if _, err := io.ReadFull(r, buf); err != nil {
			return
		}
		payload := buf[:n]
		if !hmac.Equal(buf[n:], frameMAC(key, frameNo, hdr[:], payload)) {
			t.log.Warn("replica: frame failed authentication", "peer", from, "frame", frameNo)
			return
		}
		frameNo++
		msgs, err := decodeFrame(payload)
		if err != nil {
			t.log.Warn("replica: bad frame", "peer", from, "err", err)
			return
		}
		for i := range msgs {
			// A peer speaks only for itself and only to this member.
			if msgs[i].From != from || msgs[i].To != t.cfg.ID {
				t.log.Warn("replica: message with forged ends", "peer", from, "from", msgs[i].From, "to", msgs[i].To)
				return
			}
		}
		if len(msgs) > 0 {
			t.h.Deliver(msgs)
		}
	}
}

func (t *Transport) handshake(c net.Conn) (uint64, []byte, error) {
	c.SetDeadline(time.Now().Add(t.cfg.DialTimeout))
	defer c.SetDeadline(time.Time{})
	hello := make([]byte, 8+16+nonceLen)
	if _, err := io.ReadFull(c, hello); err != nil {
		return 0, nil, err
	}
	if string(hello[:8]) != handshakeMagic {
		return 0, nil, fmt.Errorf("%w: not a replica peer", ErrAuth)
	}
	from := binary.BigEndian.Uint64(hello[8:16])
	to := binary.BigEndian.Uint64(hello[16:24])
	cn := hello[24:]
	if _, ok := t.peers[from]; !ok || to != t.cfg.ID {
		return 0, nil, fmt.Errorf("%w: member %d to %d is not a peer of %d", ErrAuth, from, to, t.cfg.ID)
	}
	sn := make([]byte, nonceLen)
	rand.Read(sn)
	reply := append(sn[:nonceLen:nonceLen], handshakeMAC(t.cfg.Secret, "server", from, t.cfg.ID, cn, sn)...)
	if _, err := c.Write(reply); err != nil {
		return 0, nil, err
	}
	proof := make([]byte, macLen)
	if _, err := io.ReadFull(c, proof); err != nil {
		return 0, nil, err
	}
	if !hmac.Equal(proof, handshakeMAC(t.cfg.Secret, "client", from, t.cfg.ID, cn, sn)) {
		return 0, nil, fmt.Errorf("%w: member %d did not prove the secret", ErrAuth, from)
	}
	return from, handshakeMAC(t.cfg.Secret, "session", from, t.cfg.ID, cn, sn), nil
}

func decodeFrame(p []byte) ([]raftpb.Message, error) {
	count, k := binary.Uvarint(p)
	if k <= 0 || count > uint64(len(p)) {
		return nil, errors.New("bad message count")
	}
	p = p[k:]
	msgs := make([]raftpb.Message, count)
	for i := range msgs {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return nil, fmt.Errorf("message %d: bad length", i)
		}
		if err := msgs[i].Unmarshal(p[k : k+int(n)]); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		p = p[k+int(n):]
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%d bytes after the messages", len(p))
	}
	return msgs, nil
}
