package core

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// TestKlines trades at random times over ten days on the exchange's clock,
// with a restart in the middle of a minute, an hour and a day, and checks
// every interval's candles, over several ranges and limits, against
// candles summed directly from the market's public trades, and windows
// (the 24-hour ticker's) likewise.
func TestKlines(t *testing.T) {
	dir := t.TempDir()
	var clock atomic.Int64
	clock.Store(1_780_000_000_000 + 12_345) // 2026-05-28, a Thursday
	o := testOptions(t, dir)
	o.Clock = clock.Load
	n, err := openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { n.Close() }()
	addUser(t, n, feeUID)
	a, b := addUser(t, n, 100), addUser(t, n, 200)
	for _, u := range []struct {
		idx engine.UserIdx
		uid int64
	}{{a, 100}, {b, 200}} {
		mustOK(t, "deposit", first(do(t, n, engine.Cmd{Kind: engine.CmdDeposit, User: u.idx, UID: u.uid, Coin: 0, Amount: 1e12})))
		mustOK(t, "deposit", first(do(t, n, engine.Cmd{Kind: engine.CmdDeposit, User: u.idx, UID: u.uid, Coin: 2, Amount: 1e15})))
	}
	r := rand.New(rand.NewPCG(7, 9))
	price := engine.Price(10000)
	trades := 0
	for step := 0; step < 400; step++ {
		switch x := r.IntN(100); {
		case x < 60:
			clock.Add(r.Int64N(90_000)) // within a minute or two
		case x < 95:
			clock.Add(r.Int64N(3_600_000))
		default:
			clock.Add(r.Int64N(3 * 86_400_000))
		}
		if step == 200 { // a restart: the current candles are read back
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			if n, err = openNode(o); err != nil {
				t.Fatal(err)
			}
		}
		price = max(9000, min(11000, price+engine.Price(r.IntN(41)-20)))
		side := engine.Side(1 + r.IntN(2))
		for i, u := range []struct {
			idx engine.UserIdx
			uid int64
		}{{a, 100}, {b, 200}} {
			s := side
			if i == 1 {
				s = engine.Buy + engine.Sell - side
			}
			mustOK(t, "place", first(do(t, n, engine.Cmd{Kind: engine.CmdPlace, User: u.idx, UID: u.uid, Market: 0, Side: s,
				Type: engine.Limit, TIF: engine.GTC, Price: price, Qty: engine.Qty(1 + r.IntN(500))})))
		}
		trades++
	}

	all, err := n.Store().MarketTrades(0, 100_000, nil)
	if err != nil || len(all) < trades {
		t.Fatalf("market trades: %d %v, want at least %d", len(all), err, trades)
	}
	first, last := all[len(all)-1].TimeMs, all[0].TimeMs // newest first
	for i := range journal.Intervals {
		iv := &journal.Intervals[i]
		want := map[int64]*journal.Candle{}
		var starts []int64
		for j := len(all) - 1; j >= 0; j-- { // oldest first
			tr := &all[j]
			s := iv.Start(tr.TimeMs)
			c := want[s]
			if c == nil {
				c = &journal.Candle{OpenMs: s}
				want[s] = c
				starts = append(starts, s)
			}
			addTrade(c, tr)
		}
		for _, q := range []struct {
			from, to int64
			limit    int
		}{
			{0, maxTime, 1000},
			{0, maxTime, 3},
			{first + (last-first)/3, last - (last-first)/3, 1000},
			{first + (last-first)/3, last - (last-first)/3, 2},
			{iv.Start(first + (last-first)/2), maxTime, 1000},
			{last + 1, maxTime, 10},
		} {
			got, err := n.Store().Klines(0, iv, q.from, q.to, q.limit)
			if err != nil {
				t.Fatal(err)
			}
			var exp []journal.Candle
			for _, s := range starts {
				if s >= q.from && s <= q.to {
					exp = append(exp, *want[s])
				}
			}
			if len(exp) > q.limit {
				exp = exp[len(exp)-q.limit:]
			}
			if len(got) != len(exp) {
				t.Fatalf("%s [%d, %d] limit %d: got %d candles, want %d", iv.Name, q.from, q.to, q.limit, len(got), len(exp))
			}
			for j := range exp {
				if got[j] != exp[j] {
					t.Fatalf("%s [%d, %d] limit %d: candle %d\n got %+v\nwant %+v", iv.Name, q.from, q.to, q.limit, j, got[j], exp[j])
				}
			}
		}
		if len(starts) < 2 {
			t.Fatalf("%s: only %d candles: the test spans too little time", iv.Name, len(starts))
		}
	}

	// Windows (the 24-hour ticker's): every trade of the minutes from the
	// one holding from to the one holding to.
	for i := 0; i < 200; i++ {
		from := first - 3_600_000 + r.Int64N(last-first+2*3_600_000)
		to := from + r.Int64N(2*86_400_000)
		if i%4 == 0 {
			to = from + 86_400_000
		}
		got, err := n.Store().Window(0, from, to)
		if err != nil {
			t.Fatal(err)
		}
		want := journal.Candle{OpenMs: from - from%60_000}
		for j := len(all) - 1; j >= 0; j-- {
			tr := &all[j]
			if tr.TimeMs < want.OpenMs || tr.TimeMs >= to-to%60_000+60_000 {
				continue
			}
			addTrade(&want, tr)
		}
		if got != want {
			t.Fatalf("window [%d, %d]:\n got %+v\nwant %+v", from, to, got, want)
		}
	}
}

// addTrade adds tr to c: the test's own account of a candle, apart from
// the journal's.
func addTrade(c *journal.Candle, tr *engine.Trade) {
	if c.Trades == 0 {
		c.Open, c.High, c.Low = tr.Price, tr.Price, tr.Price
	}
	c.High, c.Low, c.Close = max(c.High, tr.Price), min(c.Low, tr.Price), tr.Price
	c.Volume += tr.Qty
	c.QuoteVolume += tr.Quote
	c.Trades++
	if tr.TakerSide == engine.Buy {
		c.TakerBuyVolume += tr.Qty
		c.TakerBuyQuote += tr.Quote
	}
}

// TestIntervalStarts checks the calendar intervals: weeks start on
// Monday 00:00 UTC, months on their first day.
func TestIntervalStarts(t *testing.T) {
	find := func(name string) *journal.Interval {
		for i := range journal.Intervals {
			if journal.Intervals[i].Name == name {
				return &journal.Intervals[i]
			}
		}
		t.Fatalf("no interval %s", name)
		return nil
	}
	const thu = 1_780_000_000_000 // 2026-05-28T20:26:40Z, a Thursday
	w, m := find("1w"), find("1M")
	if got := w.Start(thu); got != 1_779_667_200_000 { // Monday 2026-05-25
		t.Errorf("week of %d: got %d", int64(thu), got)
	}
	if got := w.End(w.Start(thu)); got != 1_780_272_000_000 {
		t.Errorf("week end: got %d", got)
	}
	if got := m.Start(thu); got != 1_777_593_600_000 { // 2026-05-01
		t.Errorf("month of %d: got %d", int64(thu), got)
	}
	if got := m.End(m.Start(thu)); got != 1_780_272_000_000 { // 2026-06-01
		t.Errorf("month end: got %d", got)
	}
	if got := find("4h").Start(thu); got != 1_779_998_400_000 { // 20:00
		t.Errorf("4h: got %d", got)
	}
}
