package engine_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/engine/enginetest"
)

// TestLiquidationCrash is issue #46's crash simulation (docs/DESIGN.md,
// "Liquidation"). One ledger engine owns three perpetuals: the contract
// world's BTCUSDT (USDT-margined, tick 0.5) and ETHBTC (BTC-margined), and
// an ETHUSDT, so that a cross account can hold positions in two contracts
// of one margin coin (the accounts liquidate.go checks exactly at every
// command). Position limits are raised so that market makers can hold the
// other side of every user.
//
//   - 2,400 users open leveraged LONGs and SHORTs (leverage 1x-100x within
//     each contract's bounds, cross and isolated, a quarter of them in two
//     contracts, some hedged) against market makers: 2,000 around the
//     starting price, 400 during the crash, at the price of the moment.
//   - The price of every contract is then driven down 40% and back up, in
//     steps of 2%: each step the market makers cancel and re-quote a ladder
//     around the new price, a driver crosses it, noise takers trade both
//     ways; users close parts of positions, add isolated margin, move money
//     out of their futures wallets; a funding payment every few steps.
//   - After every command (see setupEvery below for when the O(state)
//     checks run): engine.CheckInvariants (run with -tags invariants:
//     it then also fails on a position left below maintenance), and this
//     test's own checks from public getters: no wallet's available or total
//     negative, money conserved per coin (wallets + position values - bad
//     debt = deposits - withdrawals), no risk unit left underwater by the
//     rule of docs/DESIGN.md.
//   - At the end: the journal (every command with the decisions Apply
//     recorded) replayed into a fresh engine gives the same state hash and
//     the same outcome per command; liquidations happened both ways, and
//     the insurance account took positions over or positions were
//     auto-deleveraged.
func TestLiquidationCrash(t *testing.T) {
	start := time.Now()
	s := newLiqSim(t, 1)
	users, late := 2000, 400
	if testing.Short() || raceEnabled {
		users, late = 500, 100
	}
	s.setup(users, late)
	s.crash(20, late)
	s.logStats()
	setupDone := time.Since(start)

	// replay the journal into a fresh engine
	r := newLiqSim(t, 1)
	r.replay(s)
	if got, want := engine.StateHash(r.acc, []*engine.Engine{r.e}), engine.StateHash(s.acc, []*engine.Engine{s.e}); got != want {
		t.Fatalf("replayed state hash %x, live %x", got, want)
	}
	if err := engine.CheckInvariants(r.acc, []*engine.Engine{r.e}); err != nil {
		t.Fatalf("replayed: %v", err)
	}

	st := &s.stats
	if st.liqLong == 0 || st.liqShort == 0 {
		t.Errorf("liquidation orders: %d of LONGs, %d of SHORTs; want both", st.liqLong, st.liqShort)
	}
	if st.adl == 0 && st.takeover == 0 {
		t.Errorf("no auto-deleveraging and no insurance takeover")
	}
	if st.insTouched == 0 {
		t.Errorf("the insurance account was never billed (no takeover, payout or liquidation income)")
	}
	t.Logf("%d commands, %d users, %s live + checks, %s in all", len(s.journal), s.acc.NumUsers(), setupDone.Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond))
}

const (
	liqBTC = engine.CoinID(1)

	liqMMs     = 4  // market makers: uids 100..
	liqDrivers = 4  // uids 200..
	liqNoise   = 30 // uids 300..
	liqUser0   = 10_000
	liqLevels  = 5 // each market maker's ladder levels per side

	// When the checks run: engine.CheckInvariants is O(state) (every
	// order, position and wallet: ~1.5 ms here), too slow for all ~21,000
	// commands. It runs after every command that liquidated or
	// auto-deleveraged, after every command of the crash phase except the
	// quiet ones (after every quietEvery-th of those): the market makers'
	// re-quotes (cancels and passive orders, 40% of the phase), and
	// deposits and settings (late users' before their opens); and during
	// the setup (opens at the price of the moment) after every
	// setupEvery-th command. This test's own checks (ownChecks: ~0.25 ms)
	// run with it, and after every command of the crash phase.
	setupEvery = 64
	quietEvery = 8
)

// liqCt is one contract of the simulation and its price path.
type liqCt struct {
	spec    *engine.MarketSpec
	coin    engine.CoinID // margin (futures wallet)
	p0      engine.Price
	spacing engine.Price // the market makers' ladder step
	levs    []int64      // the users' leverages
	center  engine.Price // where the market makers quote now
}

type liqStats struct {
	liqLong, liqShort int // liquidation orders closing LONGs / SHORTs (insurance's own included)
	takeover          int // insurance takeover orders
	adl               int // auto-deleveraging orders
	liqCmds           int // commands that liquidated
	insTouched        int // commands that billed the insurance account
	rejects           map[engine.Reject]int
	checks            int
	maxLiqPerCmd      int
}

// liqSim is one engine owning the three contracts, with the fee account
// (uid 1) and the insurance account (uid 2).
type liqSim struct {
	t       *testing.T
	acc     *engine.Accounts
	e       *engine.Engine
	cts     []*liqCt
	byID    map[engine.MarketID]*liqCt
	seq     uint64
	out     engine.Out
	rnd     *rand.Rand
	journal []engine.Cmd
	digest  []liqDigest
	uids    map[int64]engine.UserIdx

	every    int  // check after every every-th command (and after every liquidation)
	since    int  // commands since the last check
	ownEvery bool // run ownChecks after every command (the crash phase)
	stats    liqStats
	insFunds [2]engine.Amount // USDT, BTC
	pos      []engine.PositionView
	timeMs   int64
	fundAt   int64
	nextUser int // next positioned user (index from liqUser0)
}

// liqDigest is what a command produced, compared on replay.
type liqDigest struct {
	reject          engine.Reject
	updates, trades int
	liq             int    // orders of the engine's own
	hash            uint64 // of the updates, trades and bills
}

// digestOut sums up out.
func digestOut(out *engine.Out) liqDigest {
	d := liqDigest{reject: out.Reject, updates: len(out.Updates), trades: len(out.Trades)}
	h := uint64(14695981039346656037)
	mix := func(vs ...int64) {
		for _, v := range vs {
			h = (h ^ uint64(v)) * 1099511628211
		}
	}
	for i := range out.Updates {
		v := &out.Updates[i]
		if v.Kind != engine.KindNormal {
			d.liq++
		}
		mix(v.OrderID, v.UID, int64(v.Price), int64(v.OrigQty), int64(v.ExecutedQty), int64(v.CumQuote), int64(v.Status), int64(v.Kind), int64(v.Side), int64(v.Pos))
	}
	for i := range out.Trades {
		tr := &out.Trades[i]
		mix(tr.TradeID, int64(tr.Price), int64(tr.Qty), tr.MakerOrder, tr.TakerOrder, int64(tr.MakerFee), int64(tr.TakerFee), int64(tr.MakerPnl), int64(tr.TakerPnl))
	}
	for i := range out.Bills {
		b := &out.Bills[i]
		mix(int64(b.BillID), b.UID, int64(b.Coin), int64(b.Biz), int64(b.Delta), int64(b.After), int64(b.Fee))
	}
	d.hash = h
	return d
}

func liqConfigs() []engine.ContractConfig {
	cs := enginetest.ContractConfigs()
	cs[0].MaxPositionSize = "10000"   // BTCUSDT: market makers hold the other side of everyone
	cs[1].MaxPositionSize = "1000000" // ETHBTC
	eth := cs[0]
	eth.Symbol, eth.V2Symbol, eth.ContractID, eth.BaseAsset, eth.IndexSymbol = "ETHUSDT", "cmt_ethusdt", 3, "ETH", "ETHUSDT"
	eth.TickSize, eth.StepSize, eth.MinOrderSize, eth.MaxOrderSize, eth.MaxPositionSize = "0.01", "0.001", "0.001", "100", "100000"
	eth.MaxLeverage, eth.DefaultLeverage, eth.MaintenanceMarginRate, eth.TakerFeeRate = 75, 10, "0.0075", "0.0005"
	return append(cs, eth)
}

func newLiqSim(t *testing.T, seed uint64) *liqSim {
	coins := enginetest.Coins()
	specs := enginetest.ContractSpecs(coins, liqConfigs())
	s := &liqSim{t: t, acc: engine.NewAccounts(coins), rnd: rand.New(rand.NewPCG(seed, 46)), every: 1,
		byID: map[engine.MarketID]*liqCt{}, uids: map[int64]engine.UserIdx{},
		stats: liqStats{rejects: map[engine.Reject]int{}}}
	s.e = engine.New(0, s.acc, specs, enginetest.FeeUID)
	s.e.SetInsuranceUID(enginetest.InsuranceUID)
	for i, x := range []struct {
		p0      string
		spacing engine.Price
		levs    []int64
	}{
		{"30000", 30, []int64{1, 2, 3, 5, 10, 20, 25, 33, 50, 75, 100}}, // BTCUSDT, tick 0.5: 0.05%
		{"0.05", 3, []int64{2, 3, 5, 10, 20, 25, 50}},                   // ETHBTC, tick 0.00001: 0.06%
		{"2000", 100, []int64{1, 2, 5, 10, 20, 40, 50, 75}},             // ETHUSDT, tick 0.01: 0.05%
	} {
		sp := specs[i]
		p0, err := sp.ParsePrice([]byte(x.p0))
		if err != nil {
			t.Fatal(err)
		}
		c := &liqCt{spec: sp, coin: sp.Margin, p0: p0, spacing: x.spacing, levs: x.levs, center: p0}
		s.cts = append(s.cts, c)
		s.byID[sp.ID] = c
	}
	return s
}

func (s *liqSim) user(uid int64) engine.UserIdx {
	u, ok := s.uids[uid]
	if !ok {
		s.t.Fatalf("no user %d", uid)
	}
	return u
}

// apply applies c (User from UID), journals it and checks the state.
func (s *liqSim) apply(c engine.Cmd) engine.Reject {
	s.t.Helper()
	if c.Kind != engine.CmdAddUser {
		c.User = s.user(c.UID)
	}
	s.seq++
	s.timeMs += 10
	s.e.Apply(&c, s.seq, s.timeMs, &s.out)
	s.e.Flush()
	if c.Kind == engine.CmdAddUser && s.out.Reject == engine.OK {
		u, _ := s.acc.Lookup(c.UID)
		s.uids[c.UID] = u
	}
	s.journal = append(s.journal, c)
	d := digestOut(&s.out)
	for i := range s.out.Updates {
		v := &s.out.Updates[i]
		switch v.Kind {
		case engine.KindLiquidation:
			switch {
			case v.UID == enginetest.InsuranceUID && (v.Side == engine.Buy) == (v.Pos == engine.Long):
				s.stats.takeover++ // the takeover opens
			case v.Pos == engine.Long:
				s.stats.liqLong++
			default:
				s.stats.liqShort++
			}
		case engine.KindADL:
			s.stats.adl++
		}
	}
	for i := range s.out.Bills {
		if s.out.Bills[i].UID == enginetest.InsuranceUID {
			s.stats.insTouched++
			break
		}
	}
	s.digest = append(s.digest, d)
	if d.liq > 0 {
		s.stats.liqCmds++
		s.stats.maxLiqPerCmd = max(s.stats.maxLiqPerCmd, d.liq)
	}
	if s.out.Reject != engine.OK {
		s.stats.rejects[s.out.Reject]++
	}
	s.since++
	every := s.every
	switch c.Kind {
	case engine.CmdAddUser, engine.CmdDeposit, engine.CmdLeverage, engine.CmdMarginMode: // cannot put anyone underwater
		every = max(every, quietEvery)
	}
	if d.liq > 0 || s.since >= every {
		s.check(&c)
	} else if s.ownEvery {
		if err := s.ownChecks(); err != nil {
			s.t.Fatalf("after command %d %s: %v", s.seq, fmtCmd(&c), err)
		}
	}
	return s.out.Reject
}

func (s *liqSim) must(c engine.Cmd) {
	s.t.Helper()
	if r := s.apply(c); r != engine.OK {
		s.t.Fatalf("command %d %s: %v", s.seq, fmtCmd(&c), r)
	}
}

// check runs engine.CheckInvariants and this test's own checks.
func (s *liqSim) check(c *engine.Cmd) {
	s.t.Helper()
	s.since = 0
	s.stats.checks++
	if err := engine.CheckInvariants(s.acc, []*engine.Engine{s.e}); err != nil {
		s.t.Fatalf("after command %d %s: %v", s.seq, fmtCmd(c), err)
	}
	if err := s.ownChecks(); err != nil {
		s.t.Fatalf("after command %d %s: %v", s.seq, fmtCmd(c), err)
	}
}

// ownChecks checks, from public getters only: no wallet negative, money
// conserved per coin, and no risk unit underwater (docs/DESIGN.md,
// "Liquidation": an isolated position's margin + uPnL, a cross account's
// D + uPnL, above maintenance at the mark).
func (s *liqSim) ownChecks() error {
	nc := len(s.acc.Coins())
	sum := make([]engine.Amount, nc)
	for _, c := range s.cts {
		sum[c.coin.Spot()] -= s.e.BadDebt(c.spec.ID)
	}
	for u := engine.UserIdx(0); int(u) < s.acc.NumUsers(); u++ {
		var d, crossEq, crossMM [3]engine.Amount // per coin
		var hasCross [3]bool
		var crossSize [8]engine.Qty // per contract (index in cts): long + short of cross positions
		for c := engine.CoinID(0); int(c) < nc; c++ {
			for _, w := range [2]engine.CoinID{c, c | engine.Futures} {
				avail, frozen := s.acc.Balance(u, w)
				total := s.acc.Total(u, w)
				if avail < 0 || total < 0 || frozen < 0 {
					return fmt.Errorf("user %d coin %d wallet %d: available %d total %d", s.acc.UID(u), c, w>>15, avail, total)
				}
				sum[c] += total
			}
			d[c] = s.acc.Total(u, c|engine.Futures)
		}
		s.pos = s.e.Positions(u, engine.AllMarkets, s.pos[:0])
		for i := range s.pos {
			p := &s.pos[i]
			ct := s.byID[p.Market]
			coin := ct.coin.Spot()
			if p.Side == engine.Long {
				sum[coin] -= p.OpenValue
			} else {
				sum[coin] += p.OpenValue
			}
			mark := s.e.MarkPrice(p.Market)
			n := engine.Amount(int64(mark) * int64(p.Size) * int64(ct.spec.QuotePerTickStep))
			upnl := n - p.OpenValue
			if p.Side == engine.Short {
				upnl = -upnl
			}
			if p.Mode == engine.Isolated {
				d[coin] -= p.Margin
				if mm := engine.Fee(n, ct.spec.MaintRate); mark > 0 && p.Margin+upnl <= mm {
					return fmt.Errorf("user %d %s isolated side %d left underwater: margin %d + uPnL %d <= maintenance %d at mark %d (%+v)",
						p.UID, ct.spec.Symbol, p.Side, p.Margin, upnl, mm, mark, *p)
				}
				continue
			}
			hasCross[coin] = true
			crossEq[coin] += upnl
			for k, x := range s.cts {
				if x == ct {
					crossSize[k] += p.Size
				}
			}
		}
		for k, x := range s.cts {
			if crossSize[k] > 0 {
				n := engine.Amount(int64(s.e.MarkPrice(x.spec.ID)) * int64(crossSize[k]) * int64(x.spec.QuotePerTickStep))
				crossMM[x.coin.Spot()] += engine.Fee(n, x.spec.MaintRate)
			}
		}
		for c := range hasCross {
			if hasCross[c] && d[c]+crossEq[c] <= crossMM[c] {
				return fmt.Errorf("user %d coin %d cross account left underwater: D %d + uPnL %d <= maintenance %d",
					s.acc.UID(u), c, d[c], crossEq[c], crossMM[c])
			}
		}
	}
	for c := range sum {
		if net := s.acc.Net(engine.CoinID(c)); sum[c] != net {
			return fmt.Errorf("coin %d: wallets + positions - bad debt = %d, deposits - withdrawals = %d", c, sum[c], net)
		}
	}
	return nil
}

// replay applies live's journal, checking each command's outcome.
func (s *liqSim) replay(live *liqSim) {
	s.t.Helper()
	for i := range live.journal {
		c := live.journal[i]
		if !c.Replaying() {
			s.t.Fatalf("command %d: no decision recorded", i+1)
		}
		s.e.Apply(&c, uint64(i+1), int64(i+1)*10, &s.out)
		s.e.Flush()
		if d := digestOut(&s.out); d != live.digest[i] {
			s.t.Fatalf("command %d %s replayed: %+v, live %+v", i+1, fmtCmd(&c), digestOut(&s.out), live.digest[i])
		}
	}
}

func (s *liqSim) deposit(uid int64, coin engine.CoinID, x engine.Amount) {
	s.must(engine.Cmd{Kind: engine.CmdDeposit, UID: uid, Coin: coin | engine.Futures, Amount: x})
}

// notional is N(p, q) of contract c.
func (c *liqCt) notional(p engine.Price, q engine.Qty) engine.Amount {
	return engine.Amount(int64(p) * int64(q) * int64(c.spec.QuotePerTickStep))
}

// order is a limit (p > 0) or market order of uid in c.
func (c *liqCt) order(uid int64, sd engine.Side, ps engine.PosSide, tif engine.TIF, p engine.Price, q engine.Qty) engine.Cmd {
	o := engine.Cmd{Kind: engine.CmdPlace, UID: uid, Market: c.spec.ID, Side: sd, Pos: ps, Type: engine.Limit, TIF: tif, Price: p, Qty: q}
	if p == 0 {
		o.Type, o.TIF = engine.Market, 0
	}
	return o
}

// posSide is the position side uid's order of side sd and q uses: a close
// of the opposite position when it has q free, else an open.
func (s *liqSim) posSide(uid int64, c *liqCt, sd engine.Side, q engine.Qty) engine.PosSide {
	want := engine.Short // a BUY closes a SHORT
	if sd == engine.Sell {
		want = engine.Long
	}
	s.pos = s.e.Positions(s.user(uid), c.spec.ID, s.pos[:0])
	for _, p := range s.pos {
		if p.Side == want && p.Size-p.Closing >= q {
			return want
		}
	}
	return engine.Long + engine.Short - want
}

func mmUID(i int) int64 { return int64(100 + i) }

// setup registers everyone, funds the market makers, drivers, noise
// takers and the insurance account, and opens n users' positions around
// the starting prices.
func (s *liqSim) setup(n, late int) {
	s.every = setupEvery
	for _, uid := range []int64{enginetest.FeeUID, enginetest.InsuranceUID} {
		s.must(engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
	}
	var big []int64
	for i := 0; i < liqMMs; i++ {
		big = append(big, mmUID(i))
	}
	for i := 0; i < liqDrivers; i++ {
		big = append(big, int64(200+i))
	}
	for _, uid := range big {
		s.must(engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
		s.deposit(uid, ctUSDT, 100_000_000*1e6) // 100M USDT
		s.deposit(uid, liqBTC, 10_000*1e8)      // 10k BTC
		for _, c := range s.cts {
			s.must(engine.Cmd{Kind: engine.CmdLeverage, UID: uid, Market: c.spec.ID, Amount: 10})
		}
	}
	for i := 0; i < liqNoise; i++ {
		uid := int64(300 + i)
		s.must(engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
		s.deposit(uid, ctUSDT, 1_000_000*1e6)
		s.deposit(uid, liqBTC, 100*1e8)
	}
	for i := 0; i < n+late; i++ { // the crash's late users too
		s.must(engine.Cmd{Kind: engine.CmdAddUser, UID: int64(liqUser0 + i)})
	}
	// a modest insurance fund: it runs dry, then positions are deleveraged
	s.insFunds = [2]engine.Amount{5_000 * 1e6, 0.2 * 1e8}
	s.deposit(enginetest.InsuranceUID, ctUSDT, s.insFunds[0])
	s.deposit(enginetest.InsuranceUID, liqBTC, s.insFunds[1])

	// the first quotes and trade of each contract
	for _, c := range s.cts {
		s.requote(c, c.p0)
		s.must(c.order(200, engine.Sell, engine.Short, engine.IOC, c.p0-c.spacing, 100))
	}
	for i := 0; i < n; i++ {
		s.openUser(s.nextUser, 0)
		s.nextUser++
	}
}

// requote has the market makers cancel everything in c and quote a
// ladder of liqLevels levels each side around center.
func (s *liqSim) requote(c *liqCt, center engine.Price) {
	defer func(every int) { s.every = every }(s.every)
	s.every = max(s.every, quietEvery)
	c.center = center
	for i := 0; i < liqMMs; i++ {
		s.must(engine.Cmd{Kind: engine.CmdCancelAll, UID: mmUID(i), Market: c.spec.ID})
	}
	for l := 1; l <= liqLevels; l++ {
		for i := 0; i < liqMMs; i++ {
			off := engine.Price(l)*c.spacing + engine.Price(i%2)*(c.spacing/3)
			s.must(c.order(mmUID(i), engine.Sell, engine.Short, engine.GTC, center+off, engine.Qty(500+s.rnd.IntN(1000))))
			s.must(c.order(mmUID(i), engine.Buy, engine.Long, engine.GTC, center-off, engine.Qty(500+s.rnd.IntN(1000))))
		}
	}
}

// openUser funds user i (uid liqUser0+i), sets its modes and leverages and
// opens its positions against the market makers at the contracts' centers
// (one contract, a quarter of the users two, some hedged); only is the
// contract a late user opens in (0: any).
func (s *liqSim) openUser(i int, only engine.MarketID) {
	uid := int64(liqUser0 + i)
	type leg struct {
		c    *liqCt
		ps   engine.PosSide
		q    engine.Qty
		lev  int64
		mode engine.MarginMode
	}
	var legs []leg
	first := s.cts[s.rnd.IntN(len(s.cts))]
	if only != 0 {
		first = s.byID[only]
	}
	cs := []*liqCt{first}
	if only == 0 && s.rnd.IntN(4) == 0 {
		second := s.cts[s.rnd.IntN(len(s.cts))]
		if s.rnd.IntN(2) == 0 { // often both USDT contracts: a cross account over two contracts
			second = s.cts[[3]int{2, 0, 0}[first.spec.ID-engine.ContractBase]]
		}
		if second != first {
			cs = append(cs, second)
		}
	}
	for _, c := range cs {
		mode := engine.Cross
		if s.rnd.IntN(2) == 0 {
			mode = engine.Isolated
		}
		lev := c.levs[s.rnd.IntN(len(c.levs))]
		sides := []engine.PosSide{engine.PosSide(1 + s.rnd.IntN(2))}
		if s.rnd.IntN(20) == 0 {
			sides = []engine.PosSide{engine.Long, engine.Short} // hedged
		}
		for _, ps := range sides {
			legs = append(legs, leg{c, ps, engine.Qty(10 + s.rnd.IntN(3000)), lev, mode})
		}
	}
	// fund: initial margin and taker fee of each leg, and a buffer (cross:
	// up to 150% of the margin; isolated: up to 50%, left in the wallet)
	var need [3]engine.Amount
	for _, l := range legs {
		n := l.c.notional(l.c.center+l.c.spacing, l.q)
		im := (n + engine.Amount(l.lev) - 1) / engine.Amount(l.lev)
		buf := engine.Amount(s.rnd.Int64N(int64(im)/2 + 1))
		if l.mode == engine.Cross {
			buf *= 3
		}
		need[l.c.coin.Spot()] += im + engine.Fee(n, l.c.spec.TakerRate) + buf + 1
	}
	for coin, x := range need {
		if x > 0 {
			s.deposit(uid, engine.CoinID(coin), x)
		}
	}
	done := map[*liqCt]bool{}
	for _, l := range legs {
		if !done[l.c] {
			done[l.c] = true
			if l.mode == engine.Isolated {
				s.must(engine.Cmd{Kind: engine.CmdMarginMode, UID: uid, Market: l.c.spec.ID, Mode: engine.Isolated})
			}
			s.must(engine.Cmd{Kind: engine.CmdLeverage, UID: uid, Market: l.c.spec.ID, Amount: engine.Amount(l.lev)})
		}
	}
	for _, l := range legs {
		c := l.c
		// a market maker rests the other side inside its ladder's spread;
		// the user takes it
		p := c.center + engine.Price(s.rnd.IntN(int(c.spacing)))*2/3 - c.spacing/3
		mm := mmUID(s.rnd.IntN(liqMMs))
		msd, usd := engine.Sell, engine.Buy
		if l.ps == engine.Short {
			msd, usd = engine.Buy, engine.Sell
		}
		if only == 0 { // the setup: calm, everything fills
			s.must(c.order(mm, msd, 3-l.ps, engine.GTC, p, l.q))
			s.must(c.order(uid, usd, l.ps, engine.IOC, p, l.q))
			if o := s.out.Order(); o == nil || o.ExecutedQty != l.q {
				s.t.Fatalf("user %d's open in %s did not fill: %+v", uid, c.spec.Symbol, o)
			}
		} else {
			// the crash: a liquidation after the market maker's order may
			// take it, or move the last price so far that the band refuses
			if s.apply(c.order(mm, msd, 3-l.ps, engine.GTC, p, l.q)) != engine.OK {
				continue
			}
			s.apply(c.order(uid, usd, l.ps, engine.IOC, p, l.q))
		}
	}
	for _, l := range legs {
		if l.mode == engine.Isolated && s.rnd.IntN(10) == 0 { // some add margin from the wallet
			if x := s.acc.Available(s.user(uid), l.c.coin) / 2; x > 0 {
				s.apply(engine.Cmd{Kind: engine.CmdPositionMargin, UID: uid, Market: l.c.spec.ID, Pos: l.ps, Amount: x})
			}
		}
	}
}

// crash drives every contract's price down 40% in steps of 2%, then back
// up, opening late users' positions on the way.
func (s *liqSim) crash(steps, late int) {
	s.every, s.ownEvery = 1, true
	total := 2 * steps
	perStep := late / total
	for k := 1; k <= total; k++ {
		f := 1 - 0.4*float64(k)/float64(steps) // of p0
		if k > steps {
			f = 0.6 + 0.4*float64(k-steps)/float64(steps)
		}
		for i, c := range s.cts {
			late := perStep / len(s.cts)
			if i < perStep%len(s.cts) {
				late++
			}
			s.step(c, engine.Price(f*float64(c.p0)), k <= steps, late)
		}
		s.events()
		if k%4 == 0 {
			s.funding()
		}
	}
}

// step moves c's price toward target: the market makers re-quote around
// it (within the price band of the last trade), late users open
// positions at the new price, a driver crosses, noise takers trade.
func (s *liqSim) step(c *liqCt, target engine.Price, down bool, late int) {
	last := s.e.LastPrice(c.spec.ID)
	center := min(max(target, last*97/100), last*103/100)
	s.requote(c, center)
	for range late {
		s.openUser(s.nextUser, c.spec.ID)
		s.nextUser++
	}
	driver := int64(200 + s.rnd.IntN(liqDrivers))
	q := engine.Qty(1000 + s.rnd.IntN(3000))
	if down {
		s.apply(c.order(driver, engine.Sell, s.posSide(driver, c, engine.Sell, q), engine.IOC, center-2*c.spacing, q))
	} else {
		s.apply(c.order(driver, engine.Buy, s.posSide(driver, c, engine.Buy, q), engine.IOC, center+2*c.spacing, q))
	}
	for j := 0; j < 3; j++ {
		uid := int64(300 + s.rnd.IntN(liqNoise))
		sd := engine.Side(1 + s.rnd.IntN(2))
		q := engine.Qty(10 + s.rnd.IntN(500))
		p := engine.Price(0) // market
		if s.rnd.IntN(2) == 0 {
			p = center + c.spacing
			if sd == engine.Sell {
				p = center - c.spacing
			}
		}
		s.apply(c.order(uid, sd, s.posSide(uid, c, sd, q), engine.IOC, p, q))
	}
}

// events: a few positioned users close part of a position at market, add
// isolated margin, or move money out of the futures wallet (which may
// leave a cross account underwater: the same command liquidates it).
func (s *liqSim) events() {
	for j := 0; j < 6; j++ {
		uid := int64(liqUser0 + s.rnd.IntN(s.nextUser))
		u := s.user(uid)
		s.pos = s.e.Positions(u, engine.AllMarkets, s.pos[:0])
		if len(s.pos) == 0 {
			continue
		}
		p := s.pos[s.rnd.IntN(len(s.pos))]
		c := s.byID[p.Market]
		switch j % 3 {
		case 0:
			if q := (p.Size - p.Closing) / 2; q >= c.spec.MinQty {
				sd := engine.Sell
				if p.Side == engine.Short {
					sd = engine.Buy
				}
				s.apply(c.order(uid, sd, p.Side, 0, 0, q))
			}
		case 1:
			if p.Mode == engine.Isolated {
				if x := s.acc.Available(u, c.coin) / 3; x > 0 {
					s.apply(engine.Cmd{Kind: engine.CmdPositionMargin, UID: uid, Market: c.spec.ID, Pos: p.Side, Amount: x})
				}
			}
		default:
			if x := s.acc.Available(u, c.coin) * 9 / 10; x > 0 {
				s.apply(engine.Cmd{Kind: engine.CmdTransfer, UID: uid, Coin: c.coin.Spot(), Amount: x})
			}
		}
	}
}

// funding pays every contract's funding for the next interval with a
// recorded premium of up to ±2% (the rate is clamped to ±0.75%).
func (s *liqSim) funding() {
	s.fundAt += 8 * 3_600_000
	for _, c := range s.cts {
		prem := s.rnd.Int64N(4*engine.RateOne/100+1) - 2*engine.RateOne/100
		s.apply(engine.Cmd{Kind: engine.CmdFunding, UID: enginetest.FeeUID, Market: c.spec.ID, OrderID: s.fundAt,
			Amount: engine.Amount(prem), Price: c.center})
	}
}

func (s *liqSim) logStats() {
	st := &s.stats
	ins := s.user(enginetest.InsuranceUID)
	s.t.Logf("liquidation orders: %d of LONGs, %d of SHORTs; %d insurance takeovers, %d ADL orders; %d commands liquidated (at most %d orders in one); %d commands billed the insurance account",
		st.liqLong, st.liqShort, st.takeover, st.adl, st.liqCmds, st.maxLiqPerCmd, st.insTouched)
	s.t.Logf("insurance: USDT %d -> %d, BTC %d -> %d, positions %+v", s.insFunds[0], s.acc.Total(ins, ctUSDT|engine.Futures),
		s.insFunds[1], s.acc.Total(ins, liqBTC|engine.Futures), s.e.Positions(ins, engine.AllMarkets, nil))
	for _, c := range s.cts {
		s.t.Logf("%s: mark %d (start %d), bad debt %d, last %d", c.spec.Symbol, s.e.MarkPrice(c.spec.ID), c.p0, s.e.BadDebt(c.spec.ID), s.e.LastPrice(c.spec.ID))
		// liquidation closes positions before their money runs out:
		// bad debt only from a bankruptcy price clamped to one tick
		if d := s.e.BadDebt(c.spec.ID); d != 0 {
			s.t.Errorf("%s: bad debt %d", c.spec.Symbol, d)
		}
	}
	s.t.Logf("open positions %d, %d checks, rejects %v", s.e.OpenPositions(), st.checks, st.rejects)
}
