package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

var testSecret = []byte("0123456789abcdef-test-secret")

// tcpMember is one member of a group on loopback, on its own Pebble.
type tcpMember struct {
	id   uint64
	dir  string
	addr string
	db   *pebble.DB
	g    *Group
	live atomic.Pointer[Group] // g while it runs, for the proposers
	tr   *Transport
	sm   *recorder
}

type tcpGroup struct {
	t       *testing.T
	members map[uint64]*tcpMember
	addrs   map[uint64]string
	seen    *seenLog
}

func newTCPGroup(t *testing.T) *tcpGroup {
	c := &tcpGroup{t: t, members: map[uint64]*tcpMember{}, addrs: map[uint64]string{}, seen: &seenLog{m: map[uint64][]byte{}}}
	lns := map[uint64]net.Listener{}
	for id := uint64(1); id <= 3; id++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[id] = ln
		c.addrs[id] = ln.Addr().String()
	}
	base := t.TempDir()
	for id := uint64(1); id <= 3; id++ {
		m := &tcpMember{id: id, dir: filepath.Join(base, fmt.Sprint(id)), addr: c.addrs[id]}
		c.members[id] = m
		c.start(m, lns[id])
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			c.stop(m)
		}
	})
	return c
}

func (c *tcpGroup) start(m *tcpMember, ln net.Listener) {
	t := c.t
	if ln == nil {
		var err error
		// The port was this member's before; nothing else on loopback
		// takes it in the moment between.
		if ln, err = net.Listen("tcp", m.addr); err != nil {
			t.Fatal(err)
		}
	}
	m.db = openDB(t, m.dir)
	m.sm = &recorder{id: m.id, seen: c.seen}
	peers := map[uint64]string{}
	for id, a := range c.addrs {
		if id != m.id {
			peers[id] = a
		}
	}
	var err error
	m.g, m.tr, err = Open(Config{
		ID: m.id, Group: 1, Members: []uint64{1, 2, 3},
		Tick: 10 * time.Millisecond, ElectionTicks: 10,
		ProposeTimeout: 2 * time.Second, SnapshotEntries: 100, CompactKeep: 20,
	}, TransportConfig{Listener: ln, Peers: peers, Secret: testSecret, IdleTimeout: 2 * time.Second}, m.db, m.sm)
	if err != nil {
		t.Fatal(err)
	}
	m.live.Store(m.g)
}

// stop closes the member as a crash would leave it, as far as its peers
// and its disk can tell: every synced write is there, nothing else is sent.
func (c *tcpGroup) stop(m *tcpMember) {
	if m.g == nil {
		return
	}
	m.live.Store(nil)
	m.tr.Close()
	m.g.Close()
	m.db.Close()
	m.g = nil
}

func (c *tcpGroup) leader(t *testing.T, among ...uint64) *tcpMember {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, id := range among {
			m := c.members[id]
			if m.g != nil && m.g.Status().State == "leader" {
				return m
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no leader among %v within 5 s", among)
	return nil
}

// proposer proposes distinct data through whichever member leads,
// following NotLeaderError, until stop closes; it records what was
// acknowledged.
type proposer struct {
	mu    sync.Mutex
	acked map[uint64][]byte
	n     int
}

func (p *proposer) run(c *tcpGroup, name string, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	target := uint64(1)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		g := c.members[target].live.Load()
		if g == nil {
			target = target%3 + 1
			time.Sleep(time.Millisecond)
			continue
		}
		data := fmt.Appendf(nil, "%s-%d", name, i)
		idx, err := g.Propose(context.Background(), data)
		var nl NotLeaderError
		switch {
		case err == nil:
			p.mu.Lock()
			p.acked[idx] = data
			p.n++
			p.mu.Unlock()
		case errors.As(err, &nl) && nl.Leader != 0:
			target = nl.Leader
		default:
			time.Sleep(5 * time.Millisecond)
			if errors.As(err, &nl) || errors.Is(err, ErrClosed) {
				target = target%3 + 1
			}
		}
	}
}

func (p *proposer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// waitApplied waits until every listed member applied the leader's commit
// index, and checks that they hold the same entries and every acknowledged
// one.
func (c *tcpGroup) waitApplied(t *testing.T, p *proposer, ids ...uint64) {
	// Every index acknowledged by now is at most the commit index read
	// after this copy, which the members are then waited for.
	p.mu.Lock()
	acked := maps.Clone(p.acked)
	p.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l := c.leader(t, ids...)
		commit := l.g.Status().Commit
		ok := true
		for _, id := range ids {
			if s := c.members[id].g.Status(); s.Applied < commit {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			for _, id := range ids {
				t.Logf("member %d: %+v", id, c.members[id].g.Status())
			}
			t.Fatalf("members %v did not apply up to %d within 10 s", ids, commit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var refIdx []uint64
	var refData [][]byte
	for n, id := range ids {
		idx, data := c.members[id].sm.entries()
		at := map[uint64][]byte{}
		for i := range idx {
			at[idx[i]] = data[i]
		}
		for i, d := range acked {
			if !bytes.Equal(at[i], d) {
				t.Fatalf("member %d: acknowledged %s at %d, applied %s there", id, short(d), i, short(at[i]))
			}
		}
		if n == 0 {
			refIdx, refData = idx, data
			continue
		}
		// Members may differ only by entries committed after the check
		// above began; the common prefix must be equal.
		k := min(len(idx), len(refIdx))
		for i := 0; i < k; i++ {
			if idx[i] != refIdx[i] || !bytes.Equal(data[i], refData[i]) {
				t.Fatalf("member %d entry %d: %d %s; member %d: %d %s", id, i, idx[i], short(data[i]), ids[0], refIdx[i], short(refData[i]))
			}
		}
	}
}

// TestGroupFailover runs three members over TCP on loopback, each on its
// own Pebble, with proposers following the leader: the leader is closed
// mid-stream, a new one must be elected and hold every acknowledged entry;
// the old member restarts from its Pebble, behind a compacted log, and must
// catch up through a snapshot to the same entries.
func TestGroupFailover(t *testing.T) {
	c := newTCPGroup(t)
	first := c.leader(t, 1, 2, 3)

	p := &proposer{acked: map[uint64][]byte{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go p.run(c, fmt.Sprintf("w%d", w), stop, &wg)
	}
	waitCount(t, p, 200)

	c.stop(first)
	var rest []uint64
	for id := uint64(1); id <= 3; id++ {
		if id != first.id {
			rest = append(rest, id)
		}
	}
	second := c.leader(t, rest...)
	t.Logf("leader %d closed after %d acknowledged; %d elected", first.id, p.count(), second.id)
	// Enough more that the survivors snapshot and compact past what the old
	// leader holds.
	waitCount(t, p, p.count()+400)
	c.waitApplied(t, p, rest...)
	if s := second.g.Status(); s.SnapshotIndex == 0 {
		t.Fatalf("the new leader took no snapshot: %+v", s)
	}

	c.start(first, nil)
	waitCount(t, p, p.count()+100)
	close(stop)
	wg.Wait()
	c.waitApplied(t, p, 1, 2, 3)
	s := first.g.Status()
	if s.SnapshotsReceived == 0 {
		t.Fatalf("the restarted member caught up without a snapshot: %+v", s)
	}
	t.Logf("%d acknowledged; restarted member: %+v", p.count(), s)
}

func waitCount(t *testing.T, p *proposer, n int) {
	deadline := time.Now().Add(10 * time.Second)
	for p.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d proposals acknowledged within 10 s", p.count(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGroupNoQuorum checks that a leader left alone refuses proposals at once
// rather than letting them wait, and that a follower names the leader.
func TestGroupNoQuorum(t *testing.T) {
	c := newTCPGroup(t)
	l := c.leader(t, 1, 2, 3)
	if _, err := l.g.Propose(context.Background(), []byte("before")); err != nil {
		t.Fatal(err)
	}
	for id, m := range c.members {
		if id == l.id {
			continue
		}
		_, err := m.g.Propose(context.Background(), []byte("to a follower"))
		var nl NotLeaderError
		if !errors.As(err, &nl) || nl.Leader != l.id {
			t.Fatalf("propose to follower %d: %v, want not leader (leader %d)", id, err, l.id)
		}
	}
	for id, m := range c.members {
		if id != l.id {
			c.stop(m)
		}
	}
	// Within an election timeout (100 ms) the leader knows it is alone; past
	// two it has stepped down.
	time.Sleep(250 * time.Millisecond)
	start := time.Now()
	_, err := l.g.Propose(context.Background(), []byte("alone"))
	if !errors.Is(err, ErrNoQuorum) && !errors.Is(err, ErrNotLeader) {
		t.Fatalf("propose on a leader without quorum: %v", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("refusal took %v", d)
	}
}
