package enginetest

import (
	"math/big"

	"github.com/weexcore/exchange/engine"
)

// ContractShare is the percentage of NewContractGen's commands that are
// contract commands.
const ContractShare = 30

// futures wallets of a fresh user in the contract world: 500k USDT, 20 BTC
var futuresFunds = []engine.Amount{500_000_000_000, 2_000_000_000, 0}

// the insurance account's: 200 USDT, 0.005 BTC
var insuranceFunds = []engine.Amount{200_000_000, 500_000, 0}

// thin reports whether trading user u is one whose futures wallets are
// small next to the positions it may hold: one in two, so that cross
// accounts, not only isolated positions, go underwater.
func thin(u engine.UserIdx) bool { return u >= 2 && u%2 == 1 }

// userFutures returns the futures wallets user u starts with: 1/400 of
// futuresFunds when thin.
func userFutures(u engine.UserIdx) []engine.Amount {
	if !thin(u) {
		return futuresFunds
	}
	f := make([]engine.Amount, len(futuresFunds))
	for i, x := range futuresFunds {
		f[i] = x / 400
	}
	return f
}

// NewContractGen returns a generator for the contract world (a Ref with
// the contracts of WorldContractConfigs and a NewContractCluster): about
// ContractShare% of its commands are contract commands: opens and closes
// on both sides, limit (every time in force) and market, near the touch
// and deep; cancels; leverage and margin-mode changes (many refused: a
// position or orders exist, or the value is out of range); isolated
// margin moves; transfers both ways (some too large); deposits into and
// withdrawals from futures wallets; and invalid contract commands. The
// rest is NewGen's spot stream. Liquidations are frequent: shocks trend,
// leverages go to the maximum, one user in two has thin futures wallets,
// and the insurance fund is now and then emptied or funded (takeovers
// and auto-deleveraging both happen).
func NewContractGen(seed uint64, ref *Ref, users int) *Gen {
	g := NewGen(seed, ref, users)
	g.contracts = true
	// BTCUSDT perpetual at 30000 (tick 0.5), ETHBTC at 0.06, ETHUSDT at 2000
	g.ctMid = []int64{60_000, 6_000, 200_000}
	g.ctUnit = []int64{8, 2, 30}
	g.ctDir = []engine.Side{engine.Buy, engine.Sell, engine.Buy}
	return g
}

// ctQty returns an order quantity for contract m.
func (g *Gen) ctQty(m *RefMarket) int64 {
	q := 1 + g.R.Int64N(3000) // up to 0.3 BTC, 3 ETH
	if g.R.IntN(20) == 0 {
		q *= 10
	}
	return min(q, m.MaxQty)
}

// holders returns the users with a position in m on side p (p 0: either),
// by index.
func (g *Gen) holders(m *RefMarket, p engine.PosSide, isolated bool) []engine.UserIdx {
	var us []engine.UserIdx
	for u := range g.Ref.Users {
		a := m.Accts[engine.UserIdx(u)]
		if a == nil || isolated && a.Mode != engine.Isolated {
			continue
		}
		if (p != engine.Short && a.Pos[0].Size > 0) || (p != engine.Long && a.Pos[1].Size > 0) {
			us = append(us, engine.UserIdx(u))
		}
	}
	return us
}

// idle returns a user without a position (and, if noOrders, without
// working orders) in m, or false.
func (g *Gen) idle(m *RefMarket, noOrders bool) (engine.UserIdx, bool) {
	start := g.R.IntN(len(g.Ref.Users))
	for i := range g.Ref.Users {
		u := engine.UserIdx((start + i) % len(g.Ref.Users))
		if a := m.Accts[u]; a != nil && (a.Pos[0].Size > 0 || a.Pos[1].Size > 0) {
			continue
		}
		if noOrders && len(g.Ref.OpenOrders(u, m.ID)) > 0 {
			continue
		}
		return u, true
	}
	return 0, false
}

func (g *Gen) as(c *engine.Cmd, u engine.UserIdx) { c.User, c.UID = u, g.Ref.Users[u].UID }

// posOrder sets c's side, position side and quantity: half the time a
// close by a holder of a position (mostly within what it may close, now
// and then beyond it), else an open.
func (g *Gen) posOrder(c *engine.Cmd, m *RefMarket) {
	if g.R.IntN(2) == 0 {
		p := engine.PosSide(1 + g.R.IntN(2))
		if hs := g.holders(m, p, false); len(hs) > 0 {
			u := hs[g.R.IntN(len(hs))]
			g.as(c, u)
			ps := m.Accts[u].Pos[p-1]
			c.Pos, c.Side = p, engine.Buy
			if p == engine.Long {
				c.Side = engine.Sell
			}
			free := ps.Size - ps.Closing
			var q int64
			switch k := g.R.IntN(20); {
			case k == 0 || free == 0:
				q = free + 1 + g.R.Int64N(5) // beyond the position less its working closes
			case k < 8:
				q = free // all of it
			default:
				q = 1 + g.R.Int64N(free)
			}
			c.Qty = engine.Qty(min(q, m.MaxQty))
			return
		}
	}
	c.Side = engine.Side(1 + g.R.IntN(2))
	c.Pos = engine.Long
	if c.Side == engine.Sell {
		c.Pos = engine.Short
	}
	c.Qty = engine.Qty(g.ctQty(m))
}

// preset gives about one order in six take-profit and stop-loss presets
// around its price, some on the wrong side, some on closes, a few with
// bad mark bits (all refused).
func (g *Gen) preset(c *engine.Cmd, unit int64) {
	if g.R.IntN(6) != 0 {
		return
	}
	p := int64(c.Price)
	if p == 0 {
		p = 1000 * unit
	}
	up, down := p+(1+g.R.Int64N(50))*unit, max(1, p-(1+g.R.Int64N(50))*unit)
	if g.R.IntN(10) == 0 {
		up, down = down, up // the wrong side
	}
	if c.Pos == engine.Short {
		up, down = down, up
	}
	switch g.R.IntN(3) {
	case 0:
		c.TP = engine.Price(up)
	case 1:
		c.SL = engine.Price(down)
	default:
		c.TP, c.SL = engine.Price(up), engine.Price(down)
	}
	c.TrigMark = uint8(g.R.IntN(4))
	if g.R.IntN(40) == 0 {
		c.TrigMark = 4
	}
}

// ctUser picks a contract command's user: the insurance account (index 1)
// trades now and then (its own losses are not its to pay), but less, so
// that its fund runs dry and losses become bad debt.
func (g *Gen) ctUser() (engine.UserIdx, int64) {
	u, uid := g.user()
	if u == 1 && g.R.IntN(8) != 0 {
		u = engine.UserIdx(2 + g.R.IntN(len(g.uids)-2))
		uid = g.uids[u]
	}
	return u, uid
}

// nextContract returns a contract command.
func (g *Gen) nextContract() engine.Cmd {
	u, uid := g.ctUser()
	i := g.R.IntN(len(g.Ref.Contracts))
	m := g.Ref.Contracts[i]
	unit := g.ctUnit[i]
	c := engine.Cmd{User: u, UID: uid, Market: m.ID}
	bid, ask, anchor := g.touch(m)
	switch k := g.R.IntN(1000); {
	case k < 70: // a shock: a large open to the band's edge moves the price by several percent
		c.Kind, c.Type, c.TIF = engine.CmdPlace, engine.Limit, engine.IOC
		if g.R.IntN(2) == 0 {
			c.TIF = engine.GTC // what is left rests at the edge: the touch moves there
		}
		if v, ok := g.idle(m, false); ok && g.R.IntN(4) != 0 {
			g.as(&c, v)
		}
		last := m.Last
		if last == 0 {
			last = anchor
		}
		// shocks trend (liquidations follow), back toward the start when
		// the price is 25% away from it
		mid := g.ctMid[i]
		switch {
		case last > mid+mid/4:
			g.ctDir[i] = engine.Sell
		case last < mid-mid/4:
			g.ctDir[i] = engine.Buy
		case g.R.IntN(4) == 0:
			g.ctDir[i] = engine.Buy + engine.Sell - g.ctDir[i]
		}
		c.Side, c.Pos = engine.Buy, engine.Long
		band := m.buyBand
		if g.ctDir[i] == engine.Sell {
			c.Side, c.Pos, band = engine.Sell, engine.Short, m.sellBand
		}
		c.Qty = engine.Qty(min(m.MaxQty, m.MaxPos) * int64(6+g.R.IntN(5)) / 10)
		edge := new(big.Rat).Mul(new(big.Rat).SetInt64(last), band)
		if c.Side == engine.Buy {
			c.Price = engine.Price(last + floorRat(edge).Int64())
		} else {
			c.Price = engine.Price(max(1, last-floorRat(edge).Int64()))
		}
	case k < 330: // limit order near the touch, about one in five crossing
		c.Kind, c.Type, c.TIF = engine.CmdPlace, engine.Limit, engine.GTC
		switch t := g.R.IntN(100); {
		case t < 12:
			c.TIF = engine.IOC
		case t < 22:
			c.TIF = engine.FOK
		case t < 35:
			c.TIF = engine.PostOnly
		}
		g.posOrder(&c, m)
		j := (g.R.Int64N(16) - 12) * unit
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
		g.preset(&c, unit)
		g.cid(&c)
	case k < 430: // market order
		c.Kind, c.Type = engine.CmdPlace, engine.Market
		g.posOrder(&c, m)
		if g.R.IntN(3) == 0 {
			c.TIF = engine.GTC // ignored for market orders
		}
		g.preset(&c, unit)
		g.cid(&c)
	case k < 490: // deep resting orders keep books populated
		c.Kind, c.Type, c.TIF = engine.CmdPlace, engine.Limit, engine.GTC
		g.posOrder(&c, m)
		off := (5 + g.R.Int64N(100)) * unit
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
	case k < 600: // cancel by order id, mostly the owner's
		c.Kind = engine.CmdCancel
		if len(m.Orders) > 0 {
			o := m.Orders[g.R.IntN(len(m.Orders))]
			c.OrderID = o.ID
			if g.R.IntN(10) != 0 {
				g.as(&c, o.User)
			}
		} else {
			c.OrderID = g.R.Int64N(1<<20)<<10 | int64(m.ID)
		}
	case k < 640: // cancel by client id
		c.Kind = engine.CmdCancel
		if len(m.Orders) > 0 && g.R.IntN(2) == 0 {
			o := m.Orders[g.R.IntN(len(m.Orders))]
			g.as(&c, o.User)
			c.Text.Set([]byte(o.CID))
		} else {
			g.cid(&c)
		}
	case k < 650:
		c.Kind = engine.CmdCancelAll
	case k < 710: // a transfer either way, of a margin coin mostly; some too large
		c.Kind, c.Coin = engine.CmdTransfer, engine.CoinID(g.R.IntN(2))
		if g.R.IntN(10) == 0 {
			c.Coin = 2 // ETH: a futures wallet no contract margins in
		}
		c.Amount = funds[c.Coin] / engine.Amount(2+g.R.IntN(40))
		if g.R.IntN(2) == 0 {
			c.Coin |= engine.Futures // into futures
			if thin(u) {
				c.Amount /= 200
			}
		}
		if g.R.IntN(12) == 0 {
			c.Amount *= 200
		}
		if u == 1 {
			c.Coin = c.Coin.Spot() // the insurance fund only gives
		}
	case k < 750: // a futures deposit, some for the insurance account
		c.Kind, c.Coin = engine.CmdDeposit, engine.CoinID(g.R.IntN(2))|engine.Futures
		c.Amount = userFutures(u)[c.Coin.Spot()] / engine.Amount(1+g.R.IntN(40))
		if g.R.IntN(16) == 0 {
			g.as(&c, 1) // the insurance account, a little now and then
			c.Amount /= 5000
		}
	case k < 765: // a futures withdrawal, some too large
		c.Kind, c.Coin = engine.CmdWithdraw, engine.CoinID(g.R.IntN(2))|engine.Futures
		c.Amount = futuresFunds[c.Coin.Spot()] / engine.Amount(2+g.R.IntN(60))
		if g.R.IntN(8) == 0 {
			c.Amount *= 100
		}
	case k < 845: // leverage: half of them by a user without a position here
		c.Kind = engine.CmdLeverage
		if g.R.IntN(2) == 0 {
			if v, ok := g.idle(m, false); ok {
				g.as(&c, v)
			}
		}
		levs := []int64{1, 2, 3, 5, 10, 20, 25, 50, 75, 100}
		c.Amount = engine.Amount(levs[g.R.IntN(len(levs))])
		if g.R.IntN(2) == 0 {
			c.Amount = engine.Amount(m.MaxLev)
		}
		c.Pos = engine.PosSide(g.R.IntN(3)) // 0: both
	case k < 895: // margin mode: half of them by a user without positions and orders
		c.Kind = engine.CmdMarginMode
		if g.R.IntN(2) == 0 {
			if v, ok := g.idle(m, true); ok {
				g.as(&c, v)
			}
		}
		c.Mode = engine.MarginMode(1 + g.R.IntN(2))
		if g.R.IntN(3) != 0 {
			c.Mode = engine.Isolated // most idle users end isolated
		}
	case k < 950: // isolated margin in or out
		c.Kind, c.Pos = engine.CmdPositionMargin, engine.PosSide(1+g.R.IntN(2))
		if hs := g.holders(m, 0, true); len(hs) > 0 && g.R.IntN(8) != 0 {
			v := hs[g.R.IntN(len(hs))]
			g.as(&c, v)
			a := m.Accts[v]
			if a.Pos[c.Pos-1].Size == 0 {
				c.Pos = 3 - c.Pos
			}
			mg := a.Pos[c.Pos-1].Margin
			floor := ceilDiv(big.NewInt(a.Pos[c.Pos-1].OpenValue), int64(a.Lev[c.Pos-1])).Int64()
			switch g.R.IntN(6) {
			case 4: // down to the initial margin exactly
				c.Amount = engine.Amount(floor - mg)
			case 5: // one unit below it
				c.Amount = engine.Amount(floor - mg - 1)
			case 0:
				c.Amount = engine.Amount(mg/5 + 1)
			case 1:
				c.Amount = engine.Amount(-(mg / 2)) // below the initial margin unless some was added
			case 2:
				c.Amount = engine.Amount(-(mg/20 + 1))
			default:
				c.Amount = engine.Amount(futuresFunds[m.Margin.Spot()] * 3) // more than available
				if g.R.IntN(2) == 0 {
					c.Amount = engine.Amount(mg / 3)
				}
			}
		} else {
			c.Amount = engine.Amount(1 + g.R.Int64N(1000))
		}
	case k < 962: // the insurance fund: emptied into spot, or funded
		g.as(&c, 1)
		c.Kind, c.Coin = engine.CmdTransfer, m.Margin.Spot()
		c.Amount = engine.Amount(g.Ref.cell(1, m.Margin).Avail)
		if c.Amount == 0 || g.R.IntN(2) == 0 {
			c.Kind, c.Coin = engine.CmdDeposit, m.Margin
			c.Amount = futuresFunds[m.Margin.Spot()] / engine.Amount(5+g.R.IntN(20))
		}
	default:
		g.invalidContract(&c, m, anchor)
	}
	return c
}

// invalidContract makes c a contract command that must be refused (or,
// for a few, an edge case that is accepted).
func (g *Gen) invalidContract(c *engine.Cmd, m *RefMarket, anchor int64) {
	c.Kind, c.Type, c.TIF = engine.CmdPlace, engine.Limit, engine.GTC
	c.Side, c.Pos = engine.Buy, engine.Long
	c.Price, c.Qty = engine.Price(anchor), engine.Qty(g.ctQty(m))
	switch g.R.IntN(18) {
	case 0:
		c.Pos = 0
	case 1:
		c.Pos = engine.PosSide(3 + g.R.IntN(3))
	case 2: // a close without a position (mostly)
		if v, ok := g.idle(m, false); ok {
			g.as(c, v)
		}
		c.Side, c.Pos = engine.Sell, engine.Long
		if g.R.IntN(2) == 0 {
			c.Side, c.Pos = engine.Buy, engine.Short
		}
	case 3: // a close beyond the position
		if hs := g.holders(m, engine.Long, false); len(hs) > 0 {
			v := hs[g.R.IntN(len(hs))]
			g.as(c, v)
			ps := m.Accts[v].Pos[0]
			c.Side, c.Qty = engine.Sell, engine.Qty(min(m.MaxQty, ps.Size+1))
		}
	case 4:
		c.Kind, c.Amount = engine.CmdLeverage, 0
	case 5:
		c.Kind, c.Amount = engine.CmdLeverage, engine.Amount(m.MaxLev)+1+engine.Amount(g.R.IntN(200))
	case 6:
		c.Kind, c.Amount, c.Market = engine.CmdLeverage, 5, engine.MarketID(g.R.IntN(3)) // a spot market
	case 7:
		c.Kind, c.Mode, c.Market = engine.CmdMarginMode, engine.Isolated, engine.ContractBase+engine.MarketID(2+g.R.IntN(100))
	case 8:
		c.Kind, c.Mode = engine.CmdMarginMode, engine.MarginMode(3*g.R.IntN(2)) // 0 or 3
	case 9:
		c.Kind, c.Pos, c.Amount = engine.CmdPositionMargin, engine.PosSide(3*g.R.IntN(2)), 100
	case 10:
		c.Kind, c.Coin, c.Amount = engine.CmdTransfer, engine.CoinID(3+g.R.IntN(4))|engine.Futures, 100
	case 11:
		c.Kind, c.Coin, c.Amount = engine.CmdTransfer, engine.Futures, engine.Amount(-g.R.Int64N(2))
	case 12:
		c.Kind, c.Coin, c.Amount = engine.CmdTransfer, engine.Futures, 100
		c.UID++ // does not match the index
	case 13: // the largest open: beyond maxPositionSize for a large holder
		if hs := g.holders(m, engine.Long, false); len(hs) > 0 {
			g.as(c, hs[g.R.IntN(len(hs))])
		}
		c.Qty = engine.Qty(m.MaxQty)
	case 14:
		c.Kind = engine.CmdSetRules
	case 15:
		c.Price = 1 << 50 // out of band, or before any trade an overflow
	case 16:
		c.TIF = engine.TIF(5 + g.R.IntN(3))
	case 17:
		c.Kind, c.Mode = engine.CmdMarginMode, engine.Cross
		c.UID++
	}
}
