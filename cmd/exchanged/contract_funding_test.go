package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Funding end to end (docs/API.md, "Perpetual contracts: funding"), on the
// dev clock: premiumIndex, the fundingRate history, position_funding
// income, the positions' funding fields and the wallets, to the unit, over
// a restart.

// premiumRec is a /capi/v3/market/premiumIndex record.
type premiumRec struct {
	Symbol               string `json:"symbol"`
	MarkPrice            string `json:"markPrice"`
	IndexPrice           string `json:"indexPrice"`
	EstimatedSettlePrice string `json:"estimatedSettlePrice"`
	Premium              string `json:"premium"`
	PremiumSamples       int64  `json:"premiumSamples"`
	ForecastFundingRate  string `json:"forecastFundingRate"`
	LastFundingRate      string `json:"lastFundingRate"`
	LastFundingTime      int64  `json:"lastFundingTime"`
	InterestRate         string `json:"interestRate"`
	MaxFundingRate       string `json:"maxFundingRate"`
	NextFundingTime      int64  `json:"nextFundingTime"`
	Time                 int64  `json:"time"`
	CollectCycle         int64  `json:"collectCycle"`
}

// fundingRec is a /capi/v3/market/fundingRate record.
type fundingRec struct {
	Symbol      string `json:"symbol"`
	FundingRate string `json:"fundingRate"`
	FundingTime int64  `json:"fundingTime"`
	MarkPrice   string `json:"markPrice"`
	IndexPrice  string `json:"indexPrice"`
}

type fundingPos struct {
	Side          string `json:"side"`
	Size          string `json:"size"`
	FundingFee    string `json:"fundingFee"`
	CumFundingFee string `json:"cumFundingFee"`
	MarkPrice     string `json:"markPrice"`
	UnrealizePnl  string `json:"unrealizePnl"`
}

// TestContractFunding: A holds LONG 0.1 BTCUSDT at 30000 and B the SHORT;
// the spot book 29900 / 30100 makes the index 30000.0; the ccxt user's
// contract book makes the mark 30030.0 (median of 30030, 30100 and the
// last 30000) in minute 07:51, 30060.0 in 07:52: premiums 0.1% and 0.2%,
// average 0.15%, rate 0.15% + clamp(0.01% - 0.15%, ±0.05%) = 0.1%. At
// 08:00 the long pays 0.1% × 0.1 × 30060 = 3.006 USDT to the short. A
// restart keeps it all and pays nothing twice; the next funding (16:00)
// pays 0.15% (the premium 0.2% alone): 4.509.
func TestContractFunding(t *testing.T) {
	s := startServerConfig(t, "testdata/e2e.json", "", "-dev-clock")
	a, b, mm := &userA, &userB, &userCCXT
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1).UnixMilli() // tomorrow 00:00 UTC
	const minute, hour = int64(60_000), int64(3_600_000)
	clock := func(ms int64) {
		t.Helper()
		if res := s.do(req{method: "POST", path: "/admin/v1/clock", body: fmt.Sprintf(`{"nowMs":%d}`, ms), admin: true}); res.status != 200 {
			t.Fatalf("clock: %d %s", res.status, res.body)
		}
	}
	history := func(q string) []fundingRec {
		t.Helper()
		var h []fundingRec
		s.get(nil, "/capi/v3/market/fundingRate?"+q, &h)
		return h
	}
	// settled waits for the funding of time at (both contracts: the timer
	// settles BTCUSDT, samples it, then ETHUSDT).
	settled := func(at int64) {
		t.Helper()
		q := fmt.Sprintf("&startTime=%d&endTime=%d", at, at)
		for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if len(history("symbol=BTCUSDT"+q)) == 1 && len(history("symbol=ETHUSDT"+q)) == 1 {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("no funding at %d\n%s", at, s.log)
			}
		}
	}
	premium := func() premiumRec {
		t.Helper()
		var p []premiumRec
		s.get(nil, "/capi/v3/market/premiumIndex?symbol=BTCUSDT", &p)
		if len(p) != 1 {
			t.Fatalf("premiumIndex?symbol=BTCUSDT: %+v", p)
		}
		return p[0]
	}
	// sampled moves the clock to ms and waits for the timer's n-th sample.
	sampled := func(ms, n int64) premiumRec {
		t.Helper()
		clock(ms)
		for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if p := premium(); p.PremiumSamples >= n {
				return p
			}
			if time.Now().After(end) {
				t.Fatalf("no sample %d at %d: %+v", n, ms, premium())
			}
		}
	}

	// 07:50: the timer settles 00:00 (the interest rate alone: nothing
	// sampled, nobody holds a position) and samples 07:50 without a mark.
	clock(day + 7*hour + 50*minute)
	settled(day)

	// Books and positions, within minute 07:50.
	var o order
	s.post(a, "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "0.01", "29900", ""), &o)
	s.post(b, "/api/v3/order", placeBody("BTCUSDT", "SELL", "LIMIT", "0.01", "30100", ""), &o)
	if o.Status != "NEW" {
		t.Fatalf("spot ask: %+v", o)
	}
	s.v3Place(a, kv{"price": "30000", "quantity": "0.1"})
	if r := s.v3Place(b, kv{"side": "SELL", "positionSide": "SHORT", "price": "30000", "quantity": "0.1"}); r.Status != "FILLED" {
		t.Fatalf("B's short: %+v", r)
	}
	bid := s.v3Place(mm, kv{"price": "30030", "quantity": "0.01"})
	s.v3Place(mm, kv{"side": "SELL", "positionSide": "SHORT", "price": "30100", "quantity": "0.01"})

	p := premium()
	want(t, "premiumIndex before samples", p, premiumRec{Symbol: "BTCUSDT", MarkPrice: "30030.0", IndexPrice: "30000.0",
		EstimatedSettlePrice: "30030.0", Premium: "0.00000000", ForecastFundingRate: "0.00010000", LastFundingRate: "0.00010000",
		LastFundingTime: day, InterestRate: "0.00010000", MaxFundingRate: "0.00750000", NextFundingTime: day + 8*hour,
		Time: p.Time, CollectCycle: 480})
	if p.Time < day+7*hour+50*minute || p.Time >= day+7*hour+51*minute {
		t.Errorf("premiumIndex time %d, want in minute 07:50 of %d", p.Time, day)
	}
	var price struct{ Symbol, Price string }
	s.get(nil, "/capi/v3/market/symbolPrice?symbol=BTCUSDT&priceType=MARK", &price)
	want(t, "symbolPrice MARK", price.Price, "30030.0")

	// 07:51: premium (30030 - 30000) / 30000 = 0.1%; forecast 0.1% - 0.05%
	p = sampled(day+7*hour+51*minute, 1)
	want(t, "07:51 sample", [3]string{p.Premium, p.ForecastFundingRate, p.MarkPrice}, [3]string{"0.00100000", "0.00050000", "30030.0"})
	// 07:52: the bid moves to 30060: 0.2%, average 0.15%, forecast 0.1%
	var cx ctOrder
	s.del(mm, "/capi/v3/order?orderId="+id(bid.OrderID), &cx)
	s.v3Place(mm, kv{"price": "30060", "quantity": "0.01"})
	p = sampled(day+7*hour+52*minute, 2)
	want(t, "07:52 samples", [3]string{p.Premium, p.ForecastFundingRate, p.MarkPrice}, [3]string{"0.00150000", "0.00100000", "30060.0"})

	// 08:00: the funding.
	clock(day + 8*hour)
	settled(day + 8*hour)

	check := func(when string, next int64, rows ...fundingRec) {
		t.Helper()
		h := history(fmt.Sprintf("symbol=BTCUSDT&startTime=%d", day))
		want(t, when+": fundingRate history", h, rows)
		want(t, when+": fundingRate limit=1", history(fmt.Sprintf("symbol=BTCUSDT&startTime=%d&limit=1", day)), rows[:1])
		want(t, when+": fundingRate endTime", history(fmt.Sprintf("symbol=BTCUSDT&startTime=%d&endTime=%d", day, day+8*hour-1)), rows[len(rows)-1:])
		p := premium()
		want(t, when+": premiumIndex last funding", [2]any{p.LastFundingRate, p.LastFundingTime}, [2]any{rows[0].FundingRate, rows[0].FundingTime})
		want(t, when+": premiumIndex nextFundingTime", p.NextFundingTime, next)
		var all []premiumRec
		s.get(nil, "/capi/v3/market/premiumIndex", &all)
		if len(all) != 2 || all[0].Symbol != "BTCUSDT" || all[1].Symbol != "ETHUSDT" || all[1].LastFundingRate != "0.00010000" || all[1].MarkPrice != "0.00" {
			t.Errorf("%s: premiumIndex of every contract: %+v", when, all)
		}
	}
	rate8 := fundingRec{"BTCUSDT", "0.00100000", day + 8*hour, "30060.0", "30000.0"}
	rate0 := fundingRec{"BTCUSDT", "0.00010000", day, "0.0", "0.0"}
	check("after 08:00", day+16*hour, rate8, rate0)

	// income: A paid 3.006, B received it; the wallets: A 100000 - the
	// maker fee 0.6 - 3.006, B 100000 - the taker fee 1.8 + 3.006.
	income := func(when string, u *user, wantIncome ...string) {
		t.Helper()
		var pg incomePage
		s.post(u, "/capi/v3/account/income", `{"incomeType":"position_funding","symbol":"BTCUSDT"}`, &pg)
		var got []string
		for _, it := range pg.Items {
			if it.Asset != "USDT" || it.Symbol == nil || *it.Symbol != "BTCUSDT" || it.IncomeType != "position_funding" || it.FillFee != "0.00000000" ||
				it.Time < day+8*hour || it.BillID == "" {
				t.Errorf("%s: uid %d: income row %+v", when, u.uid, it)
			}
			got = append(got, it.Income+" "+it.Balance)
		}
		want(t, fmt.Sprintf("%s: uid %d's funding income (amount, balance after)", when, u.uid), got, wantIncome)
	}
	wallet := func(when string, uid int64, total string) {
		t.Helper()
		r := s.futuresUSDT(uid)
		av, _ := strconv.ParseFloat(r.Available, 64)
		fr, _ := strconv.ParseFloat(r.Frozen, 64)
		if got := fmt.Sprintf("%.8f", av+fr); got != total {
			t.Errorf("%s: uid %d's futures USDT %+v: total %s, want %s", when, uid, r, got, total)
		}
	}
	positions := func(when string, u *user, want1 fundingPos) {
		t.Helper()
		var ps []fundingPos
		s.get(u, "/capi/v3/account/position/allPosition", &ps)
		want(t, fmt.Sprintf("%s: uid %d's positions", when, u.uid), ps, []fundingPos{want1})
	}
	after8 := func(when string) {
		t.Helper()
		income(when, a, "-3.00600000 99996.39400000")
		income(when, b, "3.00600000 100001.20600000")
		income(when, mm)
		wallet(when, 10001, "99996.39400000")
		wallet(when, 10002, "100001.20600000")
		wallet(when, 10004, "100000.00000000")
		want(t, when+": the fee account's futures USDT (fees 0.6 + 1.8, no funding remainder)", s.futuresUSDT(1).Available, "2.40000000")
		positions(when, a, fundingPos{"LONG", "0.1000", "-3.00600000", "-3.00600000", "30060.0", "6.00000000"})
		positions(when, b, fundingPos{"SHORT", "0.1000", "3.00600000", "3.00600000", "30060.0", "-6.00000000"})
	}
	after8("after 08:00")

	// ccxt: fetchFundingRate(s), fetchFundingRateHistory,
	// fetchFundingHistory, fetchMarkPrice(s), fetchPositions.
	if dir, _ := filepath.Abs("../../.ccxt"); fileExists(filepath.Join(dir, "node_modules", "ccxt", "package.json")) {
		node, err := exec.LookPath("node")
		if err != nil {
			t.Fatalf("node not found: %v", err)
		}
		cmd := exec.Command(node, "testdata/ccxt_funding.cjs", dir, s.rest, a.key, a.secret, a.passph, strconv.FormatInt(day, 10))
		out, err := cmd.CombinedOutput()
		t.Logf("ccxt funding:\n%s", out)
		if err != nil {
			t.Fatalf("ccxt funding failed: %v", err)
		}
	} else {
		t.Log("ccxt not installed in .ccxt/: the ccxt funding checks are skipped")
	}

	// Refusals.
	for _, r := range []struct {
		path         string
		status, code int
	}{
		{"/capi/v3/market/fundingRate", 400, -1141},
		{"/capi/v3/market/fundingRate?symbol=cmt_btcusdt", 400, -1121},
		{"/capi/v3/market/fundingRate?symbol=BTCUSDT&limit=1001", 400, -1140},
		{"/capi/v3/market/fundingRate?symbol=BTCUSDT&limit=0", 400, -1140},
		{"/capi/v3/market/fundingRate?symbol=BTCUSDT&startTime=2&endTime=1", 400, -1171},
		{"/capi/v3/market/fundingRate?symbol=BTCUSDT&startTime=-1", 400, -1140},
		{"/capi/v3/market/fundingRate?symbol=BTCUSDT&page=1", 400, -1140},
		{"/capi/v3/market/premiumIndex?symbol=NOPE", 400, -1121},
		{"/capi/v3/market/premiumIndex?limit=1", 400, -1140},
	} {
		s.wantErr(req{method: "GET", path: r.path}, r.status, r.code)
	}

	// A restart (the dev clock starts again from the system clock; the
	// exchange's time stays where the journal left it): the timer's
	// funding of 08:00 is refused, nothing changes.
	hash := s.stateHash()
	s.stop()
	s = startServerConfig(t, "testdata/e2e.json", s.dataDir, "-dev-clock")
	time.Sleep(2500 * time.Millisecond) // two ticks of the timer
	if h := s.stateHash(); h != hash {
		t.Fatalf("state hash after the restart: %s, want %s", h, hash)
	}
	check("after the restart", day+16*hour, rate8, rate0)
	after8("after the restart")

	// 16:00: the samples since the restart (0.2% each, the mark 30060):
	// rate 0.15%, 0.0015 × 0.1 × 30060 = 4.509.
	p = sampled(day+8*hour+30*minute, 1)
	want(t, "after the restart: samples", [2]string{p.Premium, p.ForecastFundingRate}, [2]string{"0.00200000", "0.00150000"})
	clock(day + 16*hour)
	settled(day + 16*hour)
	rate16 := fundingRec{"BTCUSDT", "0.00150000", day + 16*hour, "30060.0", "30000.0"}
	check("after 16:00", day+24*hour, rate16, rate8, rate0)
	income("after 16:00", a, "-4.50900000 99991.88500000", "-3.00600000 99996.39400000")
	income("after 16:00", b, "4.50900000 100005.71500000", "3.00600000 100001.20600000")
	wallet("after 16:00", 10001, "99991.88500000")
	wallet("after 16:00", 10002, "100005.71500000")
	positions("after 16:00", a, fundingPos{"LONG", "0.1000", "-7.51500000", "-7.51500000", "30060.0", "6.00000000"})
	positions("after 16:00", b, fundingPos{"SHORT", "0.1000", "7.51500000", "7.51500000", "30060.0", "-6.00000000"})
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
