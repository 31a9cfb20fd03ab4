package replica

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Sender carries a member's messages to its peers; Transport is one.
type Sender interface {
	Send(msgs []raftpb.Message)
}

// Config configures a Group. Zero values take the defaults named.
type Config struct {
	ID uint64
	// Group numbers the raft group within the Pebble DB (its keys), so that
	// several groups may share one DB.
	Group uint32
	// Members are every member's id, this one's included; used only to
	// bootstrap an empty storage, and must then be the same on every member.
	Members []uint64
	// Applied is the index of the last entry the state machine holds
	// already (from its own durable state); entries after it are applied.
	Applied uint64

	Tick time.Duration // default 50 ms
	// CommitDelay: how long the leader may hold back a message that only
	// tells a follower a new commit index, waiting for the next append to
	// carry it (node.hold; default 10 ms, never past the next tick; < 0:
	// never held). Followers apply an entry that much later at most; the
	// leader's commit does not wait for it.
	CommitDelay   time.Duration
	ElectionTicks int // default 10: an election timeout of 10 ticks
	// ProposeTimeout bounds how long Propose waits for a commit when the
	// caller's context has no earlier deadline (default 3 s).
	ProposeTimeout  time.Duration
	SnapshotEntries uint64 // snapshot every this many applied entries (default 10,000; 0 in a Config means default)
	CompactKeep     uint64 // entries kept behind a snapshot (default 1,000)
	Logger          *slog.Logger
}

// Group runs one member of a raft group: a goroutine that ticks raft, steps
// the messages the transport delivers, takes proposals and runs each Ready
// (node.ready holds the ordering raft requires), handing committed entries
// to the state machine in index order.
type Group struct {
	cfg Config
	n   *node
	tr  Sender

	propc   chan proposeReq
	recvc   chan []raftpb.Message
	reportc chan report
	statusc chan chan Status
	snapc   chan snapReq // SnapshotAt (snapshot.go)
	stop    chan struct{}
	done    chan struct{}

	leader atomic.Uint64
	err    error // set before done closes

	closeOnce sync.Once
}

type proposeReq struct {
	data []byte
	res  chan proposeRes
}

type proposeRes struct {
	index uint64
	err   error
}

type report struct {
	id       uint64
	snapshot bool
	ok       bool
}

// NewGroup starts a member on st (bootstrapped with cfg.Members if empty),
// applying to sm and sending through tr. Messages from peers reach it through
// Deliver, which makes a Group the Handler of its Transport.
func NewGroup(cfg Config, st *Storage, sm StateMachine, tr Sender) (*Group, error) {
	if cfg.ID == 0 {
		return nil, errors.New("replica: member id 0 is reserved by raft")
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 50 * time.Millisecond
	}
	if cfg.ElectionTicks <= 0 {
		cfg.ElectionTicks = 10
	}
	if cfg.CommitDelay == 0 {
		cfg.CommitDelay = 10 * time.Millisecond
	}
	if cfg.ProposeTimeout <= 0 {
		cfg.ProposeTimeout = 3 * time.Second
	}
	if cfg.SnapshotEntries == 0 {
		cfg.SnapshotEntries = 10000
	}
	if cfg.CompactKeep == 0 {
		cfg.CompactKeep = 1000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if st.Empty() {
		if len(cfg.Members) == 0 {
			return nil, errors.New("replica: empty storage and no members to bootstrap it with")
		}
		if err := st.Bootstrap(cfg.Members); err != nil {
			return nil, err
		}
	}
	var nb [8]byte
	rand.Read(nb[:])
	g := &Group{
		cfg: cfg, tr: tr,
		propc:   make(chan proposeReq, 4096),
		recvc:   make(chan []raftpb.Message, 1024),
		reportc: make(chan report, 1024),
		statusc: make(chan chan Status),
		snapc:   make(chan snapReq),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	n, err := newNode(nodeConfig{
		ID:              cfg.ID,
		ElectionTicks:   cfg.ElectionTicks,
		SnapshotEntries: cfg.SnapshotEntries,
		CompactKeep:     cfg.CompactKeep,
		GCTicks:         int64(4*cfg.ProposeTimeout/cfg.Tick) + 1,
		HoldCommit:      cfg.CommitDelay > 0,
		Applied:         cfg.Applied,
		Nonce:           binary.LittleEndian.Uint64(nb[:]),
		Logger:          cfg.Logger,
	}, st, sm, tr.Send)
	if err != nil {
		return nil, err
	}
	g.n = n
	go g.run()
	return g, nil
}

// Open starts a member with its own TCP transport: the usual way to run one.
// The transport listens on tcfg.Listen; Close closes both.
func Open(cfg Config, tcfg TransportConfig, db *pebble.DB, sm StateMachine) (*Group, *Transport, error) {
	st, err := NewStorage(db, cfg.Group)
	if err != nil {
		return nil, nil, err
	}
	tcfg.ID = cfg.ID
	if tcfg.Logger == nil {
		tcfg.Logger = cfg.Logger
	}
	tr, err := Listen(tcfg)
	if err != nil {
		return nil, nil, err
	}
	g, err := NewGroup(cfg, st, sm, tr)
	if err != nil {
		tr.Close()
		return nil, nil, err
	}
	tr.Serve(g)
	return g, tr, nil
}

// Propose appends data to the group's log and returns its index once a
// quorum holds it durably (committed). It fails at once with a
// NotLeaderError (errors.Is ErrNotLeader) on a member that does not lead, and
// with ErrNoQuorum on a leader that has not heard from a quorum within an
// election timeout; after cfg.ProposeTimeout (or ctx's deadline) with
// ErrTimeout (or ctx's error), in which case the entry may still commit. Many
// proposals may be in flight at once, from any number of goroutines; their
// indexes follow the order in which the loop receives them.
func (g *Group) Propose(ctx context.Context, data []byte) (uint64, error) {
	p, err := g.ProposeAsync(ctx, data)
	if err != nil {
		return 0, err
	}
	return p.Wait(ctx)
}

// Proposal is a proposal handed to the loop (ProposeAsync), to Wait for.
type Proposal struct {
	g   *Group
	res chan proposeRes
}

// ProposeAsync hands data to the loop and returns without waiting for its
// commit: Propose in two halves, so that one goroutine can have several
// proposals in flight whose indexes follow the order of its calls.
func (g *Group) ProposeAsync(ctx context.Context, data []byte) (*Proposal, error) {
	res := make(chan proposeRes, 1)
	select {
	case g.propc <- proposeReq{data: data, res: res}:
		return &Proposal{g: g, res: res}, nil
	case <-g.done:
		return nil, g.closedErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Wait waits for p's commit, as Propose does (ProposeTimeout from now).
func (p *Proposal) Wait(ctx context.Context) (uint64, error) {
	g, res := p.g, p.res
	t := time.NewTimer(g.cfg.ProposeTimeout)
	defer t.Stop()
	select {
	case r := <-res:
		return r.index, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-t.C:
		return 0, ErrTimeout
	case <-g.done:
		// The loop answers every waiting proposal before done closes.
		select {
		case r := <-res:
			return r.index, r.err
		default:
			return 0, g.closedErr()
		}
	}
}

func (g *Group) closedErr() error {
	if g.err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, g.err)
	}
	return ErrClosed
}

// Leader is the member this one believes leads (0 while none is known).
func (g *Group) Leader() uint64 { return g.leader.Load() }

// Status is the member's view of the group, taken on its loop.
func (g *Group) Status() Status {
	c := make(chan Status, 1)
	select {
	case g.statusc <- c:
		return <-c
	case <-g.done:
		return Status{ID: g.cfg.ID}
	}
}

// Deliver implements Handler: messages a peer sent.
func (g *Group) Deliver(msgs []raftpb.Message) {
	select {
	case g.recvc <- msgs:
	case <-g.done:
	}
}

// Unreachable implements Handler.
func (g *Group) Unreachable(id uint64) {
	select {
	case g.reportc <- report{id: id}:
	default: // raft learns the same from the missing responses
	}
}

// SnapshotSent implements Handler.
func (g *Group) SnapshotSent(id uint64, ok bool) {
	select {
	case g.reportc <- report{id: id, snapshot: true, ok: ok}:
	case <-g.done:
	}
}

// Done is closed once the loop has stopped, by Close or by a fatal error
// (Err).
func (g *Group) Done() <-chan struct{} { return g.done }

// Err is the fatal error that stopped the loop, if any.
func (g *Group) Err() error {
	select {
	case <-g.done:
		return g.err
	default:
		return nil
	}
}

// Close stops the loop; waiting proposals get ErrClosed. It does not close
// the transport or the DB, which the caller owns.
func (g *Group) Close() error {
	g.closeOnce.Do(func() { close(g.stop) })
	<-g.done
	return g.err
}

func (g *Group) run() {
	n := g.n
	defer close(g.done)
	tick := time.NewTicker(g.cfg.Tick)
	defer tick.Stop()
	// flush sends the commit-only messages the leader holds (node.hold)
	// once they waited CommitDelay.
	flush := time.NewTimer(time.Hour)
	flush.Stop()
	defer flush.Stop()
	flushing := false
	// A Ready that writes anything is written by the writer goroutine
	// while the loop goes on stepping messages, ticking (heartbeats) and
	// taking proposals (they join the next Ready): a stalled disk holds
	// no message. One at a time, and no snapshot or compaction of the log
	// meanwhile (snapc is off).
	var saving *readyJob
	jobs := make(chan *readyJob)
	saved := make(chan *readyJob, 1)
	go func() {
		for j := range jobs {
			j.save()
			saved <- j
		}
	}()
	defer func() {
		if saving != nil {
			<-saved // the caller may close the DB once run returns
		}
		close(jobs)
	}()
	fail := func(err error) {
		g.err = err
		g.cfg.Logger.Error("replica: member stopped", "id", g.cfg.ID, "err", err)
		n.failAll(ErrClosed)
	}
	for {
		snapc := g.snapc
		if saving != nil {
			snapc = nil
		}
		select {
		case <-g.stop:
			n.failAll(ErrClosed)
			return
		case j := <-saved:
			saving = nil
			if err := n.readyEnd(j); err != nil {
				fail(err)
				return
			}
		case <-tick.C:
			n.tick()
		case <-flush.C:
			flushing = false
			n.flushHeld()
		case req := <-g.propc:
			g.propose(req)
			// Every proposal already queued joins this Ready: one write
			// and one round of messages for all of them.
			for i := 0; i < 4096; i++ {
				select {
				case req := <-g.propc:
					g.propose(req)
					continue
				default:
				}
				break
			}
		case msgs := <-g.recvc:
			g.step(msgs)
			for i := 0; i < 256; i++ {
				select {
				case msgs := <-g.recvc:
					g.step(msgs)
					continue
				default:
				}
				break
			}
		case r := <-g.reportc:
			if r.snapshot {
				st := raft.SnapshotFinish
				if !r.ok {
					st = raft.SnapshotFailure
				}
				n.rn.ReportSnapshot(r.id, st)
			} else {
				n.rn.ReportUnreachable(r.id)
			}
		case c := <-g.statusc:
			c <- n.status()
		case req := <-snapc:
			req.res <- n.snapshotAt(req.index, req.data)
		}
		for saving == nil {
			j := n.readyBegin()
			if j == nil {
				break
			}
			if j.writes() {
				saving = j
				jobs <- j
				break
			}
			if err := n.readyEnd(j); err != nil { // nothing to write
				fail(err)
				return
			}
		}
		n.ackEarly()
		if len(n.held) > 0 && !flushing {
			flush.Reset(g.cfg.CommitDelay)
			flushing = true
		}
		g.leader.Store(n.leader())
	}
}

func (g *Group) propose(req proposeReq) {
	g.n.propose(req.data, func(index uint64, err error) {
		req.res <- proposeRes{index: index, err: err}
	})
}

func (g *Group) step(msgs []raftpb.Message) {
	for _, m := range msgs {
		if err := g.n.step(m); err != nil {
			g.cfg.Logger.Debug("replica: message refused", "err", err)
		}
	}
}
