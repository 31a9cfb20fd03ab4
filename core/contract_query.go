package core

import (
	"time"

	"github.com/weexcore/exchange/engine"
)

// QueryContracts (node.go) reads contract markets for the contract
// endpoints in one in-shard query on the ledger shard, which owns every
// contract market: so a market's book, last price, open interest and a
// user's settings and positions are one consistent state.
//
// The answer travels in the request's existing fields (Request has none
// of its own for it): per market, r.Bids holds the best bid then
// {last price, open interest, market id}, r.Asks the best ask then
// {margin mode, LONG leverage, SHORT leverage}; r.Positions the user's
// positions, r.Seq the ledger's sequence. Contracts decodes it.

// ContractState is one contract market as Contracts reads it.
type ContractState struct {
	Market   engine.MarketID
	Bid, Ask engine.Level // best levels; zero when the side is empty
	Last     engine.Price // last trade price; 0 before the first
	// OpenInterest is the sum of the LONG positions' sizes (equal to the
	// SHORT ones'), when asked for.
	OpenInterest engine.Qty
	// The user's margin mode and LONG/SHORT leverage (when a user was given).
	Mode engine.MarginMode
	Lev  [2]int32
}

// Contracts answers for contract market m (or engine.AllContracts: every
// contract, in id order) its best levels, last price and, if openInterest,
// its open interest; and, when uid is not 0, user u's settings there and
// u's positions (appended to pos). seq is the ledger shard's sequence as of
// the answer. Like every in-shard query it answers after the commands
// before it are durable.
func (n *Node) Contracts(u engine.UserIdx, uid int64, m engine.MarketID, openInterest bool, deadline time.Time,
	dst []ContractState, pos []engine.PositionView) ([]ContractState, []engine.PositionView, uint64, error) {
	c := engine.Cmd{User: u, UID: uid, Market: m}
	if m != engine.AllContracts && m < engine.ContractBase {
		return dst, pos, 0, nil
	}
	if openInterest {
		c.Qty = 1
	}
	r, err := n.query(QueryContracts, c, deadline)
	if err != nil {
		return dst, pos, 0, err
	}
	for i := 0; i+1 < len(r.Bids) && i+1 < len(r.Asks); i += 2 {
		info, set := r.Bids[i+1], r.Asks[i+1]
		dst = append(dst, ContractState{Market: engine.MarketID(info.Count), Bid: r.Bids[i], Ask: r.Asks[i],
			Last: info.Price, OpenInterest: info.Qty,
			Mode: engine.MarginMode(set.Price), Lev: [2]int32{int32(set.Qty), set.Count}})
	}
	pos = append(pos, r.Positions...)
	seq := r.Seq
	ReleaseRequest(r)
	return dst, pos, seq, nil
}

// contractQuery answers a QueryContracts on the shard that owns the
// contract markets (see Contracts).
func (s *shard) contractQuery(r *Request) {
	c := &r.Cmd
	r.Bids, r.Asks, r.Positions = r.Bids[:0], r.Asks[:0], r.Positions[:0]
	r.Seq = s.seq
	var one [2]engine.Level
	for _, sp := range s.eng.Markets() {
		if !sp.Contract || c.Market != engine.AllContracts && sp.ID != c.Market {
			continue
		}
		bids, asks := s.eng.Depth(sp.ID, 1, one[:0], one[1:1])
		var bid, ask engine.Level
		if len(bids) > 0 {
			bid = bids[0]
		}
		if len(asks) > 0 {
			ask = asks[0]
		}
		var oi engine.Qty
		if c.Qty == 1 {
			oi = s.eng.OpenInterest(sp.ID)
		}
		var mode engine.MarginMode
		var long, short int32
		if c.UID != 0 {
			mode, long, short, _ = s.eng.Settings(c.User, sp.ID)
		}
		r.Bids = append(r.Bids, bid, engine.Level{Price: s.eng.LastPrice(sp.ID), Qty: oi, Count: int32(sp.ID)})
		r.Asks = append(r.Asks, ask, engine.Level{Price: engine.Price(mode), Qty: engine.Qty(long), Count: short})
	}
	if c.UID != 0 && int(c.User) < s.eng.Accounts().NumUsers() && s.eng.Accounts().UID(c.User) == c.UID {
		r.Positions = s.eng.Positions(c.User, c.Market, r.Positions)
	}
}
