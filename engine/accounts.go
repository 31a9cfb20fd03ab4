package engine

import (
	"sync"
	"sync/atomic"
)

// Accounts is the balance table every shard shares (docs/DESIGN.md,
// "Shards, shared balances and the journal rule"). A (user, coin) cell
// holds two int64s, changed only by atomic add or CAS:
//
//	avail: what the user may reserve or withdraw
//	total: avail + frozen (frozen is derived: total - avail)
//
// A reservation is one CAS on avail; every change of a balance's total is one
// atomic add on total, whose result is the finance record's afterAmount.
//
// Credits to avail are not applied by Apply: they are queued in the shard's
// Engine and applied by Engine.Flush once the batch that made them is
// durable. So no decision (a reservation or withdrawal on any shard) ever
// rests on money a crash could take back: whatever a surviving journal
// record decided was backed by credits journaled before it.
type Accounts struct {
	coins []Coin
	nc    int // len(coins)
	w     int // cells per user: a spot and a futures wallet per coin (2*nc)

	// pages holds users in fixed pages so that growth never moves a cell
	// other shards are reading. Written only by the ledger shard (AddUser);
	// the atomic pointers publish new pages.
	pages [maxPages]atomic.Pointer[userPage]
	n     atomic.Uint32 // users registered; idx < n are valid

	// net is deposits minus withdrawals per coin (conservation check).
	net []atomic.Int64

	mu    sync.RWMutex // guards byUID (admin and start-up paths only)
	byUID map[int64]UserIdx

	// settled holds the broker commissions paid (CmdRebate), so that a
	// day is paid once. Written by the ledger shard only; read at barriers.
	settled map[SettleKey]struct{}
}

const (
	pageBits = 10
	pageSize = 1 << pageBits
	maxPages = 1 << 14 // 16M users
)

type cell struct {
	avail atomic.Int64
	total atomic.Int64
}

type userPage struct {
	uid      [pageSize]int64
	referrer [pageSize]int64
	rate     [pageSize]int64  // a broker's rebate rate (RateOne = 100%)
	refIdx   [pageSize]uint32 // 1 + the referrer's index when it is a broker, else 0
	broker   [pageSize]bool
	cells    []cell // pageSize * w: each user's spot cells, then its futures cells
}

// Futures marks a CoinID as the futures wallet of the coin in its low bits
// (docs/DESIGN.md, "Contracts"). A coin's two wallets are two cells; its
// net supply (deposits minus withdrawals) counts both.
const Futures CoinID = 1 << 15

// Spot returns the coin of wallet c (c without the Futures mark).
func (c CoinID) Spot() CoinID { return c &^ Futures }

// IsFutures reports whether c names a futures wallet.
func (c CoinID) IsFutures() bool { return c&Futures != 0 }

// NewAccounts makes an empty table for coins (indexed by Coin.ID).
func NewAccounts(coins []Coin) *Accounts {
	for i, c := range coins {
		if int(c.ID) != i {
			panic("engine: coins must be indexed by ID")
		}
	}
	return &Accounts{coins: coins, nc: len(coins), w: 2 * len(coins), net: make([]atomic.Int64, len(coins)),
		byUID: make(map[int64]UserIdx), settled: make(map[SettleKey]struct{})}
}

// Coins returns the coins, indexed by CoinID.
func (a *Accounts) Coins() []Coin { return a.coins }

// NumUsers returns how many users are registered.
func (a *Accounts) NumUsers() int { return int(a.n.Load()) }

// Lookup returns the index of uid.
func (a *Accounts) Lookup(uid int64) (UserIdx, bool) {
	a.mu.RLock()
	u, ok := a.byUID[uid]
	a.mu.RUnlock()
	return u, ok
}

// UID returns the external uid of user u.
func (a *Accounts) UID(u UserIdx) int64 { return a.pages[u>>pageBits].Load().uid[u&(pageSize-1)] }

// Broker reports whether u is a broker, and u's referrer uid (0 if none).
func (a *Accounts) Broker(u UserIdx) (broker bool, referrer int64) {
	p := a.pages[u>>pageBits].Load()
	return p.broker[u&(pageSize-1)], p.referrer[u&(pageSize-1)]
}

// RebateRate returns broker u's rebate rate (RateOne = 100%).
func (a *Accounts) RebateRate(u UserIdx) int64 {
	return a.pages[u>>pageBits].Load().rate[u&(pageSize-1)]
}

// Referral returns the broker that referred u and its rebate rate; ok is
// false when u has no referrer or its referrer was not a registered
// broker when u was registered.
func (a *Accounts) Referral(u UserIdx) (broker UserIdx, rate int64, ok bool) {
	r := a.pages[u>>pageBits].Load().refIdx[u&(pageSize-1)]
	if r == 0 {
		return 0, 0, false
	}
	return UserIdx(r - 1), a.RebateRate(UserIdx(r - 1)), true
}

// Valid reports whether u is registered with uid.
func (a *Accounts) Valid(u UserIdx, uid int64) bool {
	return uint32(u) < a.n.Load() && a.UID(u) == uid
}

// addUser registers uid. Only the ledger shard calls it (single writer).
func (a *Accounts) addUser(uid int64, broker bool, referrer, rate int64) (UserIdx, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, dup := a.byUID[uid]; dup {
		return 0, false
	}
	var refIdx uint32
	if r, ok := a.byUID[referrer]; ok && referrer != 0 {
		if rp := a.pages[r>>pageBits].Load(); rp.broker[r&(pageSize-1)] {
			refIdx = uint32(r) + 1
		}
	}
	n := a.n.Load()
	if n >= maxPages*pageSize {
		return 0, false
	}
	p := a.pages[n>>pageBits].Load()
	if p == nil {
		p = &userPage{cells: make([]cell, pageSize*a.w)}
		a.pages[n>>pageBits].Store(p)
	}
	i := n & (pageSize - 1)
	p.uid[i], p.broker[i], p.referrer[i], p.rate[i], p.refIdx[i] = uid, broker, referrer, rate, refIdx
	a.byUID[uid] = UserIdx(n)
	a.n.Store(n + 1) // publishes the user
	return UserIdx(n), true
}

func (a *Accounts) cell(u UserIdx, c CoinID) *cell {
	return &a.pages[u>>pageBits].Load().cells[int(u&(pageSize-1))*a.w+a.slot(c)]
}

// slot returns wallet c's index in a user's cells.
func (a *Accounts) slot(c CoinID) int { return int(c.Spot()) + a.nc*int(c>>15) }

// row returns u's spot cells, indexed by CoinID, and u's uid: one page
// lookup for several coins.
func (a *Accounts) row(u UserIdx) ([]cell, int64) {
	p := a.pages[u>>pageBits].Load()
	i := int(u & (pageSize - 1))
	return p.cells[i*a.w : i*a.w+a.nc : i*a.w+a.nc], p.uid[i]
}

// ValidCoin reports whether c is a wallet of a configured coin.
func (a *Accounts) ValidCoin(c CoinID) bool { return int(c.Spot()) < a.nc }

// Net returns deposits minus withdrawals of c (both wallets).
func (a *Accounts) Net(c CoinID) Amount { return Amount(a.net[c.Spot()].Load()) }

// Available returns u's available balance of c.
func (a *Accounts) Available(u UserIdx, c CoinID) Amount {
	return Amount(a.cell(u, c).avail.Load())
}

// Total returns u's available+frozen balance of c.
func (a *Accounts) Total(u UserIdx, c CoinID) Amount {
	return Amount(a.cell(u, c).total.Load())
}

// Balance returns u's available and frozen balance of c. The two loads are
// not one atomic read: callers that need a consistent view read while the
// shards are quiet, or wait for the writes they saw to be durable.
func (a *Accounts) Balance(u UserIdx, c CoinID) (avail, frozen Amount) {
	cl := a.cell(u, c)
	t := cl.total.Load()
	v := cl.avail.Load()
	return Amount(v), Amount(t - v)
}

// reserve takes x from u's available c if there is enough (live decision).
func (a *Accounts) reserve(u UserIdx, c CoinID, x Amount) bool {
	cl := a.cell(u, c)
	for {
		v := cl.avail.Load()
		if v < int64(x) {
			return false
		}
		if cl.avail.CompareAndSwap(v, v-int64(x)) {
			return true
		}
	}
}

// debitAvail takes x from available unconditionally (replay of a recorded
// reservation).
func (a *Accounts) debitAvail(u UserIdx, c CoinID, x Amount) {
	a.cell(u, c).avail.Add(-int64(x))
}

// addTotal changes u's total of c by d and returns the new total.
func (a *Accounts) addTotal(u UserIdx, c CoinID, d Amount) Amount {
	return Amount(a.cell(u, c).total.Add(int64(d)))
}

// SetBalance sets a cell outright; for snapshot loading only.
func (a *Accounts) setBalance(u UserIdx, c CoinID, avail, total Amount) {
	cl := a.cell(u, c)
	cl.avail.Store(int64(avail))
	cl.total.Store(int64(total))
}
