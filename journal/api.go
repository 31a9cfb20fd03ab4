package journal

// This file is the contract between the shard runtime (this package) and
// its callers (edge/, cmd/, tools/, bench/). Change it only together with
// its callers.

import (
	"errors"
	"time"

	"github.com/weexcore/exchange/engine"
)

var (
	// ErrBusy: the shard's ring is full; nothing was applied (HTTP 503, -1054).
	ErrBusy = errors.New("journal: shard busy")
	// ErrTimeout: the deadline passed before the result was durable. The
	// command may still be applied and journaled later.
	ErrTimeout = errors.New("journal: deadline exceeded")
	// ErrClosed: the node is shutting down.
	ErrClosed = errors.New("journal: closed")
)

// Options configures Open.
type Options struct {
	Dir     string
	Shards  int // market shards; 0 means runtime.NumCPU(). Persisted when the directory is created; a restart uses the persisted count.
	Coins   []engine.Coin
	Markets []*engine.MarketSpec // all markets, indexed by ID
	FeeUID  int64
	PinCPUs bool // lock each shard goroutine to a CPU (off by default)

	RingSize         int           // slots per ring (power of two); 0: default 4096
	SnapshotEvery    int           // commands between snapshots; 0: default
	SnapshotInterval time.Duration // 0: default
	ReadOnly         bool          // open for audit: replay, never write
	FullReplay       bool          // ignore snapshots: replay every shard's journal from seq 1 (audit)

	Logf func(format string, args ...any) // progress and warnings; nil: discard

	// OnAddUser is called on the ledger goroutine for every applied
	// CmdAddUser, on replay and live, so the edge can register credentials.
	OnAddUser func(c *engine.Cmd)
}

// Query selects a read that runs inside a shard (answered after the sync
// that covers every command before it, DESIGN.md "Ack after sync").
type Query uint8

const (
	QueryNone       Query = iota // a command
	QueryOpenOrders              // Cmd.User, Cmd.Market (or engine.AllMarkets)
	QueryOrder                   // Cmd.User, Cmd.Market, Cmd.OrderID or Cmd.Text
	QueryDepth                   // Cmd.Market, Cmd.Qty = levels per side
)

// Request is one command or in-shard query and, after Wait, its result.
// Requests are pooled: AcquireRequest, fill Cmd (and Query), Submit, Wait,
// read the results, ReleaseRequest.
type Request struct {
	Cmd   engine.Cmd
	Query Query

	// Results, valid once Wait returned nil.
	Out        engine.Out       // Reject and BillID; Updates/Trades/Bills are not kept
	Order      engine.OrderView // the order placed, cancelled or asked for (when HasOrder)
	HasOrder   bool
	Orders     []engine.OrderView
	Bids, Asks []engine.Level
	Last       engine.Price
	Seq        uint64
	TimeMs     int64

	rt reqState // runtime state, owned by this package (request.go)
}

// Balance is one coin of a user's balance.
type Balance struct {
	Coin   engine.CoinID
	Avail  engine.Amount
	Frozen engine.Amount
}

// Node is the running exchange core: the accounts, the shards and their
// journal.
type Node struct{ impl }

// Open opens (or creates) the data directory, loads the newest snapshot,
// replays the journal after it, and starts the shards.
func Open(o Options) (*Node, error) { return open(o) }

// AcquireRequest returns a reset request from the pool.
func AcquireRequest() *Request { return acquireRequest() }

// ReleaseRequest returns r to the pool. r must not be used afterwards.
func ReleaseRequest(r *Request) { releaseRequest(r) }

// Submit pushes r onto its shard's ring (by Cmd.Kind and Cmd.Market). It
// never blocks: a full ring returns ErrBusy and nothing is applied.
func (n *Node) Submit(r *Request) error { return n.submit(r) }

// Wait blocks until r's result is durable, or the deadline.
func (r *Request) Wait(deadline time.Time) error { return r.wait(deadline) }

// Accounts returns the shared balance table (for lookups; reading balances
// for a client goes through Balances).
func (n *Node) Accounts() *engine.Accounts { return n.accounts() }

// Markets returns every market spec, indexed by ID.
func (n *Node) Markets() []*engine.MarketSpec { return n.markets() }

// OpenOrders returns u's working orders in market m (or engine.AllMarkets,
// gathered from every shard), oldest first.
func (n *Node) OpenOrders(u engine.UserIdx, uid int64, m engine.MarketID, deadline time.Time, dst []engine.OrderView) ([]engine.OrderView, error) {
	return n.openOrders(u, uid, m, deadline, dst)
}

// Order returns u's order in m by id (or client id when orderID is 0):
// working orders from the shard, finished ones from history.
func (n *Node) Order(u engine.UserIdx, uid int64, m engine.MarketID, orderID int64, cid []byte, deadline time.Time) (engine.OrderView, bool, error) {
	return n.order(u, uid, m, orderID, cid, deadline)
}

// Depth returns up to limit levels per side of m, best first, and the last price.
func (n *Node) Depth(m engine.MarketID, limit int, deadline time.Time, bids, asks []engine.Level) ([]engine.Level, []engine.Level, engine.Price, error) {
	return n.depth(m, limit, deadline, bids, asks)
}

// Balances returns u's balance of every coin, as of durable state only (it
// waits until every shard has synced what the read saw).
func (n *Node) Balances(u engine.UserIdx, deadline time.Time, dst []Balance) ([]Balance, error) {
	return n.balances(u, deadline, dst)
}

// AllOrders returns u's (uid's) orders in m created within [startMs,
// endMs], oldest first, skipping offset and returning at most limit: the
// working ones from the shard, the finished ones from history.
func (n *Node) AllOrders(u engine.UserIdx, uid int64, m engine.MarketID, startMs, endMs int64, offset, limit int, deadline time.Time, dst []engine.OrderView) ([]engine.OrderView, error) {
	return n.allOrders(u, uid, m, startMs, endMs, offset, limit, deadline, dst)
}

// Bills returns uid's finance records with time in [startMs, endMs), newest
// first, filtered by coin (coinAll for any) and biz (0 for any). History
// does not keep Bill.User (it is 0); UID identifies the user.
func (n *Node) Bills(uid int64, coin int, biz engine.BizType, startMs, endMs int64, offset, limit int, dst []engine.Bill) ([]engine.Bill, error) {
	return n.bills(uid, coin, biz, startMs, endMs, offset, limit, dst)
}

// CoinAll asks Bills for every coin.
const CoinAll = -1

// Trades returns uid's trades in m within [startMs, endMs], oldest first.
// Each carries only uid's side: the other side's order, uid and fee are 0.
func (n *Node) Trades(uid int64, m engine.MarketID, startMs, endMs int64, limit int, dst []engine.Trade) ([]engine.Trade, error) {
	return n.trades(uid, m, startMs, endMs, limit, dst)
}

// MarketTrades returns m's most recent public trades, newest first.
func (n *Node) MarketTrades(m engine.MarketID, limit int, dst []engine.Trade) ([]engine.Trade, error) {
	return n.marketTrades(m, limit, dst)
}

// State returns the state hash (engine.StateHash, taken at a barrier
// through every ring) and each shard's last applied sequence.
func (n *Node) State(deadline time.Time) ([32]byte, []uint64, error) {
	return n.state(deadline)
}

// Close stops accepting, drains and syncs every ring, writes a snapshot and
// closes the journal.
func (n *Node) Close() error { return n.close() }
