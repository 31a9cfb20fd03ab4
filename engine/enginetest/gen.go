package enginetest

import (
	"strconv"

	"github.com/weexcore/exchange/engine"
)

// Gen produces a seeded random command stream over the standard world: many
// users, every market, limit GTC/IOC/FOK/POST_ONLY and market orders near
// the touch (so books stay populated and cross regularly), cancels by id and
// client id (some aimed at other users' orders), cancel-all, deposits,
// withdrawals (some too large), new users, and a sprinkle of invalid
// commands. It peeks at Ref (read-only) to aim at live orders and prices.
type Gen struct {
	R     *Rand
	Ref   *Ref
	Users int // trading users besides the fee account

	uids  []int64
	mid   []int64 // starting price per market, ticks
	cmds  int
	nextU int64

	// contracts: NewContractGen's stream (genct.go)
	contracts bool
	ctMid     []int64 // starting price per contract, ticks
	ctUnit    []int64 // a price step near the touch per contract, ticks
	ctDir     []engine.Side
}

// NewGen returns a generator for ref with seed.
func NewGen(seed uint64, ref *Ref, users int) *Gen {
	return &Gen{R: NewRand(seed), Ref: ref, Users: users,
		mid: []int64{3_000_000, 40_000, 6_000, 3_000_000}, nextU: 10_000 + int64(users)}
}

// funds per coin for a fresh user: 2M USDT, 100 BTC, 2000 ETH
var funds = []engine.Amount{2_000_000_000_000, 10_000_000_000, 200_000_000_000}

// Setup returns the commands that register the fee account and the users
// and fund them (NewContractGen's: the insurance account too, and their
// futures wallets).
func (g *Gen) Setup() []engine.Cmd {
	var cs []engine.Cmd
	add := func(uid int64, fut []engine.Amount) {
		cs = append(cs, engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
		u := engine.UserIdx(len(g.uids))
		g.uids = append(g.uids, uid)
		for c := range funds {
			cs = append(cs, engine.Cmd{Kind: engine.CmdDeposit, UID: uid, User: u, Coin: engine.CoinID(c), Amount: funds[c]})
		}
		for c, x := range fut {
			if x > 0 {
				cs = append(cs, engine.Cmd{Kind: engine.CmdDeposit, UID: uid, User: u, Coin: engine.CoinID(c) | engine.Futures, Amount: x})
			}
		}
	}
	var fut []engine.Amount
	if g.contracts {
		fut = futuresFunds
	}
	add(FeeUID, fut) // the fee account trades too, now and then
	if g.contracts {
		add(InsuranceUID, insuranceFunds) // a small fund that runs dry: then losses are bad debt
	}
	for i := 0; i < g.Users; i++ {
		if g.contracts {
			fut = userFutures(engine.UserIdx(len(g.uids)))
		}
		add(10_000+int64(i), fut)
	}
	return cs
}

func (g *Gen) user() (engine.UserIdx, int64) {
	i := g.R.IntN(len(g.uids))
	if i == 0 && g.R.IntN(4) != 0 { // the fee account trades less
		i = 1 + g.R.IntN(len(g.uids)-1)
	}
	return engine.UserIdx(i), g.uids[i]
}

// touch returns the best bid and ask of market m (0 when empty) and an
// anchor price near the touch.
func (g *Gen) touch(m *RefMarket) (bid, ask, anchor int64) {
	for _, o := range m.Orders {
		if o.Side == engine.Buy && o.Price > bid {
			bid = o.Price
		}
		if o.Side == engine.Sell && (ask == 0 || o.Price < ask) {
			ask = o.Price
		}
	}
	switch {
	case bid > 0 && ask > 0:
		anchor = (bid + ask) / 2
	case bid > 0:
		anchor = bid
	case ask > 0:
		anchor = ask
	case m.Last > 0:
		anchor = m.Last
	case m.Contract:
		anchor = g.ctMid[m.ID-engine.ContractBase]
	default:
		anchor = g.mid[m.ID]
	}
	return
}

func (g *Gen) cid(c *engine.Cmd) {
	if g.R.IntN(2) == 0 {
		c.Text.Set([]byte("c" + strconv.Itoa(g.R.IntN(12))))
	}
}

func (g *Gen) qty(m *RefMarket) engine.Qty {
	var q int64
	switch m.ID {
	case 0:
		q = 10 + g.R.Int64N(300)
	case 1:
		q = 1 + g.R.Int64N(300)
	default:
		q = 1 + g.R.Int64N(3000)
	}
	if g.R.IntN(20) == 0 {
		q *= 10 // a big order sweeps several levels
	}
	return engine.Qty(q)
}

// Next returns the next command.
func (g *Gen) Next() engine.Cmd {
	g.cmds++
	if g.contracts && g.R.IntN(100) < ContractShare {
		return g.nextContract()
	}
	u, uid := g.user()
	mid := engine.MarketID(g.R.IntN(3))
	m := g.Ref.Markets[mid]
	c := engine.Cmd{User: u, UID: uid, Market: mid}
	bid, ask, anchor := g.touch(m)
	switch k := g.R.IntN(1000); {
	case k < 500: // limit order near the touch
		c.Kind, c.Type, c.TIF = engine.CmdPlace, engine.Limit, engine.GTC
		switch t := g.R.IntN(100); {
		case t < 12:
			c.TIF = engine.IOC
		case t < 22:
			c.TIF = engine.FOK
		case t < 35:
			c.TIF = engine.PostOnly
		}
		c.Side = engine.Side(1 + g.R.IntN(2))
		// about one in five limit orders crosses the spread
		j := g.R.Int64N(16) - 12
		if c.Side == engine.Buy {
			ref := ask
			if ref == 0 {
				ref = anchor + 1
			}
			c.Price = engine.Price(max(1, ref+j))
		} else {
			ref := bid
			if ref == 0 {
				ref = max(1, anchor-1)
			}
			c.Price = engine.Price(max(1, ref-j))
		}
		c.Qty = g.qty(m)
		g.cid(&c)
	case k < 580: // market order
		c.Kind, c.Type = engine.CmdPlace, engine.Market
		c.Side = engine.Side(1 + g.R.IntN(2))
		c.Qty = g.qty(m)
		if g.R.IntN(3) == 0 {
			c.TIF = engine.GTC // ignored for market orders
		}
		g.cid(&c)
	case k < 640: // deep resting orders keep books populated
		c.Kind, c.Type, c.TIF = engine.CmdPlace, engine.Limit, engine.GTC
		c.Side = engine.Side(1 + g.R.IntN(2))
		off := 5 + g.R.Int64N(200)
		if c.Side == engine.Buy {
			ref := bid
			if ref == 0 {
				ref = anchor
			}
			c.Price = engine.Price(max(1, ref-off))
		} else {
			ref := ask
			if ref == 0 {
				ref = anchor
			}
			c.Price = engine.Price(ref + off)
		}
		c.Qty = g.qty(m)
	case k < 760: // cancel by order id, mostly the owner's
		c.Kind = engine.CmdCancel
		if len(m.Orders) > 0 {
			o := m.Orders[g.R.IntN(len(m.Orders))]
			c.OrderID = o.ID
			if g.R.IntN(10) != 0 {
				c.User, c.UID = o.User, g.Ref.Users[o.User].UID
			}
		} else {
			c.OrderID = g.R.Int64N(1<<20) + 1
		}
		if g.R.IntN(30) == 0 {
			c.OrderID = g.R.Int64N(1<<20) + 1
		}
	case k < 840: // cancel by client id
		c.Kind = engine.CmdCancel
		if len(m.Orders) > 0 && g.R.IntN(2) == 0 {
			o := m.Orders[g.R.IntN(len(m.Orders))]
			c.User, c.UID = o.User, g.Ref.Users[o.User].UID
			c.Text.Set([]byte(o.CID))
		} else {
			g.cid(&c)
		}
	case k < 847:
		c.Kind = engine.CmdCancelAll
	case k < 915:
		c.Kind, c.Coin = engine.CmdDeposit, engine.CoinID(g.R.IntN(3))
		c.Amount = funds[c.Coin] / engine.Amount(1+g.R.IntN(20))
	case k < 960:
		c.Kind, c.Coin = engine.CmdWithdraw, engine.CoinID(g.R.IntN(3))
		c.Amount = funds[c.Coin] / engine.Amount(2+g.R.IntN(60))
	case k < 965:
		c = engine.Cmd{Kind: engine.CmdAddUser, UID: g.nextU}
		if g.R.IntN(5) == 0 {
			c.UID = g.uids[g.R.IntN(len(g.uids))] // exists already
		} else {
			g.nextU++
		}
		switch g.R.IntN(6) {
		case 0, 1: // a broker with a rebate rate (some out of range)
			c.Broker, c.Amount = true, engine.Amount(g.R.Int64N(engine.RateOne+engine.RateOne/8))
		case 2: // a rate without being a broker
			c.Amount = 1
		}
		if g.R.IntN(2) == 0 {
			c.Referrer = g.uids[g.R.IntN(len(g.uids))]
		}
	case k < 972: // a broker commission, some twice, some beyond the fee account
		c.Kind, c.Coin = engine.CmdRebate, engine.CoinID(g.R.IntN(3))
		c.Amount = engine.Amount(g.R.Int64N(1000))
		if g.R.IntN(20) == 0 {
			c.Amount = funds[c.Coin] * 50
		}
		c.OrderID = engine.RebateDay(int32(g.R.IntN(3)), uint8(g.R.IntN(2)))
		// the new user gets an index only if accepted; learn it from Ref
		// on the next call (see Observe).
	default:
		g.invalid(&c, anchor)
	}
	return c
}

// Observe tells the generator the outcome of c (to learn new users).
func (g *Gen) Observe(c *engine.Cmd, r engine.Reject) {
	if c.Kind == engine.CmdAddUser && r == engine.OK {
		g.uids = append(g.uids, c.UID)
	}
}

// invalid makes c a command that must be refused (or, for a few, an edge
// case that is accepted).
func (g *Gen) invalid(c *engine.Cmd, anchor int64) {
	c.Kind, c.Type, c.TIF, c.Side = engine.CmdPlace, engine.Limit, engine.GTC, engine.Side(1+g.R.IntN(2))
	c.Price, c.Qty = engine.Price(anchor), g.qty(g.Ref.Markets[c.Market])
	switch g.R.IntN(20) {
	case 0:
		c.Qty = 0
	case 1:
		c.Qty = -5
	case 2:
		c.Qty = engine.Qty(g.Ref.Markets[c.Market].MaxQty + 1)
	case 3:
		c.Price = 0
	case 4:
		c.Price = 1 << 60 // overflow on a buy; out of band on a sell once there is a last price
	case 5:
		c.Price = engine.Price(anchor * 2) // out of the band
	case 6:
		c.Price = engine.Price(max(1, anchor/2))
	case 7:
		c.TIF = engine.TIF(5 + g.R.IntN(3))
	case 8:
		c.Side = engine.Side(3)
	case 9:
		c.Type = engine.OrderType(3)
	case 10:
		c.Market = engine.MarketID(3) // trading disabled
	case 11:
		c.Market = engine.MarketID(4 + g.R.IntN(2000))
	case 12:
		c.UID++ // does not match the index
	case 13:
		c.Kind, c.Coin, c.Amount = engine.CmdDeposit, engine.CoinID(g.R.IntN(3)), engine.Amount(-g.R.Int64N(3))
	case 14:
		c.Kind, c.Coin, c.Amount = engine.CmdDeposit, engine.CoinID(3+g.R.IntN(3)), 100
	case 15:
		c.Kind, c.Coin, c.Amount = engine.CmdDeposit, engine.CoinID(g.R.IntN(3)), engine.Amount(1<<62)
	case 16:
		c.Kind, c.Coin, c.Amount = engine.CmdWithdraw, engine.CoinID(g.R.IntN(3)), engine.Amount(1<<62)
	case 17:
		c.Kind = [...]engine.CmdKind{engine.CmdSetRules, 0, 31}[g.R.IntN(3)] // no staged rules, or no kind
	case 18:
		c.Kind, c.OrderID = engine.CmdCancel, 0 // no id, no client id
	case 19:
		c.Type = engine.Market
		c.Qty = engine.Qty(g.Ref.Markets[c.Market].BuyCap + 1)
		if c.Side == engine.Sell {
			c.Qty = engine.Qty(g.Ref.Markets[c.Market].SellCap + 1)
		}
	}
}
