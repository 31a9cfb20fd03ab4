package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// Liquidation end to end (docs/API.md, "Perpetual contracts",
// "Liquidation"; the rule exact to the unit in docs/DESIGN.md,
// "Liquidation"): positions opened through real orders, their
// liquidatePrice, real trades that move the price through it, and then
// the liquidation orders (typeCode 9/10), the auto-deleveraging close
// (typeCode 8), the insurance account's liquidation_income and takeover,
// the bills, all over a restart, and through ccxt.

// insUID is the insurance account (insurance_uid in the config). It has
// no API keys (a system account): its wallet and positions are read
// through the admin API, its bills from the data directory.
const insUID = 2

// liqOrder is the contract order record with its typeCode.
type liqOrder struct {
	ctOrder
	TypeCode string `json:"typeCode"`
}

// liquidationConfig is contractConfig (A and B with 1000000 USDT of
// futures, C with 100, rate limits off) plus the ccxt user D (1000000
// USDT of futures). The insurance account starts empty.
func liquidationConfig(t *testing.T) string {
	t.Helper()
	p := contractConfig(t)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c["insurance_uid"] != float64(insUID) {
		t.Fatalf("insurance_uid %v, want %d", c["insurance_uid"], insUID)
	}
	c["users"] = append(c["users"].([]any),
		map[string]any{"uid": userCCXT.uid, "apiKey": userCCXT.key, "secretKey": userCCXT.secret, "passphrase": userCCXT.passph,
			"futuresDeposits": map[string]any{"USDT": "1000000"}})
	out, _ := json.Marshal(c)
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestContractLiquidation (BTCUSDT: tick 0.1, step 0.0001; ETHUSDT: tick
// 0.01, step 0.001; both maintenanceMarginRate 0.005, taker 0.0006,
// maker 0.0002, 5% bands):
//
//   - A: isolated LONG 0.1 BTC at 50000, leverage 20: openValue 5000,
//     margin 250, fee 3. Underwater when 250 + 0.1p - 5000 <= 0.005 ×
//     0.1p, i.e. 0.0995p <= 4750, p <= 47738.69...: liquidatePrice
//     47738.6. Bankruptcy ceil((5000 - 250) / 0.1) = 47500.0.
//   - C: cross LONG 0.03 BTC at 50000, leverage 20, its whole wallet 100
//     USDT: fee 0.9, leaving the wallet (the rule's D) 99.1. Underwater when 99.1 + 0.03p - 1500 <=
//     0.00015p, i.e. 0.02985p <= 1400.9, p <= 46931.32...: liquidatePrice
//     46931.3. Bankruptcy ceil((1500 - 99.1) / 0.03) = ceil(46696.66...)
//     = 46696.7.
//   - A: isolated SHORT 1 ETH at 3000, leverage 20: margin 150, fee 1.8.
//     Underwater when 150 + 3000 - p <= 0.005p, i.e. p >= 3150 / 1.005 =
//     3134.328...: liquidatePrice 3134.33. Bankruptcy floor(3150 / 1) =
//     3150.00.
//
// B holds the other sides and the bids, D (the ccxt user) trades the price
// down (BTC) and up (ETH).
func TestContractLiquidation(t *testing.T) {
	cfg := liquidationConfig(t)
	dir := t.TempDir()
	s := startServerConfig(t, cfg, dir)
	a, b, c, d := &userA, &userB, &userC, &userCCXT

	s.post(a, "/capi/v3/account/marginType", `{"symbol":"BTCUSDT","marginType":"ISOLATED"}`, nil)
	s.post(a, "/capi/v3/account/leverage", `{"symbol":"BTCUSDT","isolatedLongLeverage":20}`, nil)
	s.post(a, "/capi/v3/account/marginType", `{"symbol":"ETHUSDT","marginType":"ISOLATED"}`, nil)
	s.post(a, "/capi/v3/account/leverage", `{"symbol":"ETHUSDT","isolatedShortLeverage":20}`, nil)
	s.post(c, "/capi/v3/account/leverage", `{"symbol":"BTCUSDT","crossLeverage":20}`, nil)

	place := func(u *user, symbol, side, pos, qty, price, status string) liqOrder {
		t.Helper()
		var o liqOrder
		s.post(u, "/capi/v3/order", v3Body(kv{"symbol": symbol, "side": side, "positionSide": pos, "quantity": qty, "price": price}), &o)
		if o.Status != status {
			t.Fatalf("uid %d %s %s %s %s at %s: %+v, want %s", u.uid, symbol, side, pos, qty, price, o, status)
		}
		return o
	}
	positions := func(u *user) []ctPosition {
		t.Helper()
		var ps []ctPosition
		s.get(u, "/capi/v3/account/position/allPosition", &ps)
		return ps
	}
	// brief is what the test checks of a position.
	type brief struct{ Symbol, Side, MarginType, Size, OpenValue, Margin, Realized, Liq string }
	briefsOf := func(ps []ctPosition) []brief {
		r := []brief{}
		for _, p := range ps {
			r = append(r, brief{p.Symbol, p.Side, p.MarginType, p.Size, p.OpenValue, p.MarginSize, p.RealizePnl, p.LiquidatePrice})
		}
		return r
	}
	briefs := func(u *user) []brief {
		t.Helper()
		return briefsOf(positions(u))
	}
	insBriefs := func() []brief {
		t.Helper()
		var ps []ctPosition
		s.ok(req{method: "GET", path: "/admin/v1/positions?uid=" + id(insUID), admin: true}, &ps)
		return briefsOf(ps)
	}
	history := func(u *user) []liqOrder {
		t.Helper()
		var h []liqOrder
		s.get(u, "/capi/v3/order/history", &h)
		return h
	}
	// engineOrder returns u's one finished order of type code tc in symbol.
	engineOrder := func(u *user, symbol, tc string) liqOrder {
		t.Helper()
		var found []liqOrder
		for _, o := range engineOrderList(history(u), tc) {
			if o.Symbol == symbol {
				found = append(found, o)
			}
		}
		if len(found) != 1 {
			t.Fatalf("uid %d: %d %s orders of typeCode %s: %+v", u.uid, len(found), symbol, tc, history(u))
		}
		return found[0]
	}
	// wantOrder compares o with w, ids and times taken from o.
	wantOrder := func(what string, o, w liqOrder) {
		t.Helper()
		w.OrderID, w.ClientOrderID, w.Time, w.UpdateTime = o.OrderID, o.ClientOrderID, o.Time, o.UpdateTime
		want(t, what, o, w)
		if o.OrderID <= 0 || o.Time == 0 || o.UpdateTime < o.Time || o.ClientOrderID != "x-"+id(o.OrderID) {
			t.Errorf("%s: id, client id, times: %+v", what, o)
		}
	}
	wallet := func(what string, uid int64, avail, frozen string) {
		t.Helper()
		want(t, what, s.futuresUSDT(uid), adminBal{"futures", "USDT", avail, frozen})
	}
	// incomes lists u's futures bills, newest first, as "type symbol income balance".
	incomes := func(u *user) []string {
		t.Helper()
		var pg incomePage
		s.post(u, "/capi/v3/account/income", `{"limit":100}`, &pg)
		r := []string{}
		for _, it := range pg.Items {
			sym := "-"
			if it.Symbol != nil {
				sym = *it.Symbol
			}
			r = append(r, it.IncomeType+" "+sym+" "+it.Income+" "+it.Balance)
		}
		return r
	}
	markOf := func(symbol string) string {
		t.Helper()
		var p struct{ Symbol, Price string }
		s.get(nil, "/capi/v3/market/symbolPrice?symbol="+symbol+"&priceType=MARK", &p)
		return p.Price
	}

	// 1. Positions through real orders.
	place(b, "BTCUSDT", "SELL", "SHORT", "0.13", "50000", "NEW")
	aOpen := place(a, "BTCUSDT", "BUY", "LONG", "0.1", "50000", "FILLED")
	if aOpen.TypeCode != "1" {
		t.Errorf("an open long's typeCode: %+v", aOpen)
	}
	place(c, "BTCUSDT", "BUY", "LONG", "0.03", "50000", "FILLED")
	place(b, "ETHUSDT", "BUY", "LONG", "1", "3000", "NEW")
	if o := place(a, "ETHUSDT", "SELL", "SHORT", "1", "3000", "FILLED"); o.TypeCode != "2" {
		t.Errorf("an open short's typeCode: %+v", o)
	}

	want(t, "A's positions and their liquidatePrice", briefs(a), []brief{
		{"BTCUSDT", "LONG", "ISOLATED", "0.1000", "5000.00000000", "250.00000000", "0.00000000", "47738.6"},
		{"ETHUSDT", "SHORT", "ISOLATED", "1.000", "3000.00000000", "150.00000000", "0.00000000", "3134.33"}})
	want(t, "C's position and its liquidatePrice", briefs(c), []brief{
		{"BTCUSDT", "LONG", "CROSSED", "0.0300", "1500.00000000", "75.00000000", "0.00000000", "46931.3"}})
	if p := s.position(c, "LONG"); p.LiquidatePrice != "46931.3" {
		t.Errorf("singlePosition: C's LONG %+v", p)
	}
	wallet("C's wallet after the open", c.uid, "24.10000000", "75.00000000")
	wallet("the insurance account at the start", insUID, "0.00000000", "0.00000000")

	ccxtDir, _ := filepath.Abs("../../.ccxt")
	haveCCXT := fileExists(filepath.Join(ccxtDir, "node_modules", "ccxt", "package.json"))
	runCCXT := func(phase string) {
		t.Helper()
		if !haveCCXT {
			return
		}
		node, err := exec.LookPath("node")
		if err != nil {
			t.Fatalf("node not found: %v", err)
		}
		out, err := exec.Command(node, "testdata/ccxt_liquidation.cjs", ccxtDir, s.rest, phase,
			a.key, a.secret, a.passph, b.key, b.secret, b.passph).CombinedOutput()
		t.Logf("ccxt liquidation (%s):\n%s", phase, out)
		if err != nil {
			t.Fatalf("ccxt liquidation (%s) failed: %v", phase, err)
		}
	}
	if !haveCCXT {
		if os.Getenv("CCXT_REQUIRED") != "" {
			t.Fatal("ccxt is not installed in .ccxt/ (run make ccxt)")
		}
		t.Log("ccxt not installed in .ccxt/: the ccxt liquidation checks are skipped")
	}
	runCCXT("open") // fetchPositions: liquidationPrice

	// 2. A's isolated LONG, the insurance account empty: B bids 0.06 at
	// 47700 (no ask: the mark stays the last price, 50000), D sells 0.01
	// into it: last 47700, the book's ask side empty, so the mark is
	// 47700 <= 47738.6. A's liquidation order, SELL 0.1 IOC at 47500,
	// takes B's 0.05 left at 47700: 2385 against 2500 of open value and
	// 125 of margin, 10 left over to the insurance account
	// (liquidation_income), A paying no fee. The rest, 0.05, needs
	// ceil(2375 / 20) = 118.75 of margin from the insurance account, which
	// holds 10: auto-deleveraging closes 0.05 of B's SHORT (entry 50000,
	// above D's 47700) at 47500, realizing 2500 - 2375 = 125 for B, no fee.
	place(b, "BTCUSDT", "BUY", "LONG", "0.06", "47700", "NEW")
	if m := markOf("BTCUSDT"); m != "50000.0" {
		t.Fatalf("mark with a bid alone: %s", m)
	}
	place(d, "BTCUSDT", "SELL", "SHORT", "0.01", "47700", "FILLED")

	aLiq := engineOrder(a, "BTCUSDT", "9")
	wantOrder("A's liquidation order", aLiq, liqOrder{ctOrder{Symbol: "BTCUSDT", Side: "SELL", PositionSide: "LONG", Type: "LIMIT",
		TimeInForce: "IOC", Price: "47500.0", OrigQty: "0.1000", ExecutedQty: "0.1000", AvgPrice: "47600.0", CumQuote: "4760.00000000",
		Status: "FILLED", ReduceOnly: true}, "9"})
	if g := s.ctGet(a, "orderId="+id(aLiq.OrderID)); g.Status != "FILLED" || g.OrderID != aLiq.OrderID {
		t.Errorf("GET the liquidation order: %+v", g)
	}
	var tr []ctTrade
	s.get(a, "/capi/v3/userTrades?orderId="+id(aLiq.OrderID), &tr)
	type fill struct{ Price, Qty, Commission, RealizedPnl string }
	var fills []fill
	for _, x := range tr {
		fills = append(fills, fill{x.Price, x.Qty, x.Commission, x.RealizedPnl})
	}
	want(t, "the liquidation order's fills (against B's bid, then B's SHORT)", fills, []fill{
		{"47700.0", "0.0500", "0.00000000", "-115.00000000"}, {"47500.0", "0.0500", "0.00000000", "-125.00000000"}})
	bADL := engineOrder(b, "BTCUSDT", "8")
	wantOrder("B's auto-deleveraging order", bADL, liqOrder{ctOrder{Symbol: "BTCUSDT", Side: "BUY", PositionSide: "SHORT", Type: "LIMIT",
		TimeInForce: "IOC", Price: "47500.0", OrigQty: "0.0500", ExecutedQty: "0.0500", AvgPrice: "47500.0", CumQuote: "2375.00000000",
		Status: "FILLED", ReduceOnly: true}, "8"})
	want(t, "A's positions after the BTC liquidation", briefs(a), []brief{
		{"ETHUSDT", "SHORT", "ISOLATED", "1.000", "3000.00000000", "150.00000000", "0.00000000", "3134.33"}})
	// B: SHORT 0.13 for 6500, margin 325, less 0.05 (2500, 125); LONG 0.06
	// at 47700 (2862, margin 143.1); C's position untouched.
	bPos := briefs(b)
	if len(bPos) != 3 {
		t.Fatalf("B's positions: %+v", bPos)
	}
	want(t, "B's positions after the ADL", bPos[:2], []brief{
		{"BTCUSDT", "LONG", "CROSSED", "0.0600", "2862.00000000", "143.10000000", "0.00000000", bPos[0].Liq},
		{"BTCUSDT", "SHORT", "CROSSED", "0.0800", "4000.00000000", "200.00000000", "125.00000000", bPos[1].Liq}})
	dPos := briefs(d)
	if len(dPos) != 1 {
		t.Fatalf("D's positions: %+v", dPos)
	}
	want(t, "D's position, not deleveraged (B's SHORT came first)", dPos, []brief{
		{"BTCUSDT", "SHORT", "CROSSED", "0.0100", "477.00000000", "23.85000000", "0.00000000", dPos[0].Liq}})
	want(t, "C's position after A's liquidation", briefs(c), []brief{
		{"BTCUSDT", "LONG", "CROSSED", "0.0300", "1500.00000000", "75.00000000", "0.00000000", "46931.3"}})
	want(t, "BTCUSDT mark (ADL fills do not move the last price)", markOf("BTCUSDT"), "47700.0")
	// nor are they market trades: not in the public trades or the candles
	var pub []map[string]any
	s.get(nil, "/capi/v3/market/trades?symbol=BTCUSDT&limit=100", &pub)
	for _, x := range pub {
		if x["price"] == "47500.0" {
			t.Errorf("the ADL fill is a public trade: %v", pub)
		}
	}
	var kl [][]any
	s.get(nil, "/capi/v3/market/klines?symbol=BTCUSDT&interval=1d", &kl)
	if len(kl) == 0 || kl[len(kl)-1][3] != "47700.0" || kl[len(kl)-1][4] != "47700.0" {
		t.Errorf("the day's candle (low and close 47700.0, the ADL fill left out): %v", kl)
	}
	wallet("the insurance account after A's liquidation", insUID, "10.00000000", "0.00000000")

	// 3. C's cross account, the insurance account funded: B bids 0.02 at
	// 46900, D sells 0.01 into it: mark 46900 <= 46931.3. C's liquidation
	// order, SELL 0.03 IOC at 46696.7, takes B's 0.01 at 46900: 469
	// against 500 and 25 of margin, 6 short, taken from C's wallet (24.1
	// available). The rest, 0.02 at 46696.7 = 933.934, is taken over by
	// the insurance account (cross, leverage 20: margin 46.6967, no fee):
	// C loses 1000 - 933.934 = 66.066 against 50 of margin, 16.066 more
	// from the wallet. C keeps 99.1 - 31 - 66.066 = 2.034.
	s.adminPost("/admin/v1/deposit", `{"uid":2,"coin":"USDT","amount":"1000","wallet":"futures"}`, nil)
	place(b, "BTCUSDT", "BUY", "LONG", "0.02", "46900", "NEW")
	place(d, "BTCUSDT", "SELL", "SHORT", "0.01", "46900", "FILLED")

	cLiq := engineOrder(c, "BTCUSDT", "9")
	// avgPrice (469 + 933.934) / 0.03 = 46764.4666... -> 46764.5
	wantOrder("C's liquidation order", cLiq, liqOrder{ctOrder{Symbol: "BTCUSDT", Side: "SELL", PositionSide: "LONG", Type: "LIMIT",
		TimeInForce: "IOC", Price: "46696.7", OrigQty: "0.0300", ExecutedQty: "0.0300", AvgPrice: "46764.5", CumQuote: "1402.93400000",
		Status: "FILLED", ReduceOnly: true}, "9"})
	want(t, "C's positions after its liquidation", briefs(c), []brief{})
	wallet("C's wallet after its liquidation", c.uid, "2.03400000", "0.00000000")
	// its wallet (1010) exceeds the position's value: no mark puts it underwater
	want(t, "the insurance account's position", insBriefs(), []brief{
		{"BTCUSDT", "LONG", "CROSSED", "0.0200", "933.93400000", "46.69670000", "0.00000000", "0.0"}})
	wallet("the insurance account after the takeover", insUID, "963.30330000", "46.69670000")
	if len(engineOrderList(history(b), "8")) != 1 {
		t.Errorf("a second ADL with the insurance account funded: %+v", history(b))
	}

	// 4. A's isolated ETH SHORT: B asks 2 at 3140, D buys 1 of it: mark
	// 3140 >= 3134.33. A's liquidation order, BUY 1 IOC at 3150, takes
	// B's other 1 at 3140: 3000 - 3140 = -140 against 150 of margin, 10
	// to the insurance account.
	place(b, "ETHUSDT", "SELL", "SHORT", "2", "3140", "NEW")
	place(d, "ETHUSDT", "BUY", "LONG", "1", "3140", "FILLED")
	aLiqEth := engineOrder(a, "ETHUSDT", "10")
	wantOrder("A's ETH liquidation order", aLiqEth, liqOrder{ctOrder{Symbol: "ETHUSDT", Side: "BUY", PositionSide: "SHORT", Type: "LIMIT",
		TimeInForce: "IOC", Price: "3150.00", OrigQty: "1.000", ExecutedQty: "1.000", AvgPrice: "3140.00", CumQuote: "3140.00000000",
		Status: "FILLED", ReduceOnly: true}, "10"})
	want(t, "A's positions after both liquidations", briefs(a), []brief{})

	// The money, to the unit. A: 1000000 - 3 - 1.8 (open fees) - 250 -
	// 150 (the margins). The insurance account: 10 + 1000 + 10, 46.6967
	// of it the position's margin.
	wallet("A's wallet at the end", a.uid, "999595.20000000", "0.00000000")
	wallet("the insurance account at the end", insUID, "973.30330000", "46.69670000")
	want(t, "A's bills", incomes(a), []string{
		"position_close_short ETHUSDT -150.00000000 999595.20000000",
		"position_close_long BTCUSDT -125.00000000 999745.20000000",
		"position_close_long BTCUSDT -125.00000000 999870.20000000",
		"position_open_short ETHUSDT -1.80000000 999995.20000000",
		"position_open_long BTCUSDT -3.00000000 999997.00000000",
		"deposit - 1000000.00000000 1000000.00000000"})
	want(t, "C's bills", incomes(c), []string{
		"position_close_long BTCUSDT -66.06600000 2.03400000",
		"position_close_long BTCUSDT -31.00000000 68.10000000",
		"position_open_long BTCUSDT -0.90000000 99.10000000",
		"deposit - 100.00000000 100.00000000"})
	bBills := incomes(b)
	if !slices.ContainsFunc(bBills, func(x string) bool { return strings.HasPrefix(x, "position_close_short BTCUSDT 125.00000000 ") }) {
		t.Errorf("B's bills lack the ADL close: %v", bBills)
	}

	runCCXT("liquidated") // fetchPositions, fetchClosedOrders, fetchCanceledAndClosedOrders

	// 5. A restart replays it all.
	snap := func() map[string]string {
		m := map[string]string{"hash": s.stateHash()}
		for _, u := range []*user{a, b, c, d} {
			m[u.key+" history"] = string(s.get(u, "/capi/v3/order/history", nil))
			m[u.key+" trades"] = string(s.get(u, "/capi/v3/userTrades", nil))
			m[u.key+" positions"] = string(s.get(u, "/capi/v3/account/position/allPosition", nil))
			m[u.key+" income"] = string(s.post(u, "/capi/v3/account/income", `{"limit":100}`, nil))
			m[u.key+" balances"] = string(s.ok(req{method: "GET", path: "/admin/v1/balances?uid=" + id(u.uid), admin: true}, nil))
		}
		m["insurance balances"] = string(s.ok(req{method: "GET", path: "/admin/v1/balances?uid=" + id(insUID), admin: true}, nil))
		m["insurance positions"] = string(s.ok(req{method: "GET", path: "/admin/v1/positions?uid=" + id(insUID), admin: true}, nil))
		m["mark"] = markOf("BTCUSDT") + " " + markOf("ETHUSDT")
		return m
	}
	pre := snap()
	compare := func(when string) {
		t.Helper()
		post := snap()
		for k, v := range pre {
			if got := post[k]; got != v {
				t.Errorf("%s after %s:\n got %s\nwant %s", k, when, got, v)
			}
		}
	}

	// 5a. A crash: the journal replays every command, the liquidations
	// among them, to the same state, history and bills.
	s.cmd.Process.Kill()
	<-s.exited
	s = startServerConfig(t, cfg, dir)
	compare("a crash")

	// 5b. A clean stop (a snapshot) and a start from it.
	s.stop()
	// The insurance account's bills, from the data directory (it has no
	// API keys): the first liquidation's leftover, the deposit and the ETH
	// liquidation's leftover (the takeover's open changed its wallet by
	// nothing, no fee: no bill).
	want(t, "the insurance account's bills", insuranceBills(t, dir), []string{
		"liquidation_income BTCUSDT 10.00000000 10.00000000",
		"deposit - 1000.00000000 1010.00000000",
		"liquidation_income ETHUSDT 10.00000000 1020.00000000"})
	s = startServerConfig(t, cfg, dir)
	// liquidatePrice is worked out from the state, before any command
	// rebuilds the engine's liquidation index
	compare("a start from a snapshot")
	wantOrder("A's liquidation order after the restart", engineOrder(a, "BTCUSDT", "9"), aLiq)
	wantOrder("B's ADL order after the restart", engineOrder(b, "BTCUSDT", "8"), bADL)
}

// engineOrderList returns the orders of h with type code tc.
func engineOrderList(h []liqOrder, tc string) []liqOrder {
	var r []liqOrder
	for _, o := range h {
		if o.TypeCode == tc {
			r = append(r, o)
		}
	}
	return r
}

// insuranceBills reads the insurance account's futures bills from the
// stopped server's data directory (read-only, as tools/audit does), oldest
// first, as "type symbol delta after".
func insuranceBills(t *testing.T, dir string) []string {
	t.Helper()
	st, err := journal.Open(journal.Options{Dir: dir, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	symbols := map[engine.MarketID]string{engine.ContractBase: "BTCUSDT", engine.ContractBase + 1: "ETHUSDT"}
	r := []string{}
	err = st.Export(nil, func(b *engine.Bill) error {
		if b.UID != insUID {
			return nil
		}
		sym, ok := symbols[b.Market]
		if !ok {
			sym = "-"
		}
		r = append(r, fmt.Sprintf("%s %s %s %s", b.Biz, sym, engine.AppendFixed(nil, int64(b.Delta), 8), engine.AppendFixed(nil, int64(b.After), 8)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
