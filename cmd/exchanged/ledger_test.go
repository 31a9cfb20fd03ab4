package main

import (
	"fmt"
	"testing"
	"time"
)

// ledgerEntry is a finance record as /api/v3/account/bills answers it.
type ledgerEntry struct {
	BillID, CoinName, BizType, DeltaAmount, AfterAmount, CTime string
	CoinID                                                     int64
}

// TestLedger: deposits, a withdrawal and trades show in the spot bills
// (filters, limit, time bounds) and, without the trades, in the funding
// bills, paged.
func TestLedger(t *testing.T) {
	s := startServer(t, "")
	time.Sleep(2 * time.Millisecond) // times are in ms: t0 after the config's deposit
	t0 := time.Now().UnixMilli()
	for _, amt := range []string{"1.5", "2.5", "3.5"} {
		s.ok(req{method: "POST", path: "/admin/v1/deposit", body: `{"uid":10003,"coin":"USDT","amount":"` + amt + `"}`, admin: true}, nil)
	}
	s.ok(req{method: "POST", path: "/admin/v1/withdraw", body: `{"uid":10003,"coin":"USDT","amount":"0.5"}`, admin: true}, nil)
	s.post(&userA, "/api/v3/order", placeBody("BTCUSDT", "SELL", "LIMIT", "0.01", "30000", ""), nil)
	s.post(&userC, "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "0.01", "30000", ""), nil)

	var all []ledgerEntry
	s.post(&userC, "/api/v3/account/bills", `{"limit":100}`, &all)
	// newest first: BTC trade_in, USDT trade_out, withdraw, 3 deposits, the config's deposit
	want := []string{"trade_in", "trade_out", "withdraw", "deposit", "deposit", "deposit", "deposit"}
	if len(all) != len(want) {
		t.Fatalf("bills: got %d %+v, want %d", len(all), all, len(want))
	}
	for i, w := range want {
		if all[i].BizType != w {
			t.Fatalf("bill %d: got %s, want %s (%+v)", i, all[i].BizType, w, all)
		}
	}
	if all[1].DeltaAmount != "-300.00000000" || all[2].DeltaAmount != "-0.50000000" || all[2].AfterAmount != "1000007.00000000" {
		t.Errorf("amounts: %+v", all[1:3])
	}
	var got []ledgerEntry
	s.post(&userC, "/api/v3/account/bills", `{"coinId":2,"bizType":"deposit","limit":2}`, &got)
	if len(got) != 2 || got[0].DeltaAmount != "3.50000000" || got[1].DeltaAmount != "2.50000000" || got[0].CoinID != 2 {
		t.Errorf("two USDT deposits: %+v", got)
	}
	s.post(&userC, "/api/v3/account/bills", `{"coinId":1}`, &got)
	if len(got) != 1 || got[0].BizType != "trade_in" || got[0].CoinName != "BTC" {
		t.Errorf("BTC bills: %+v", got)
	}
	// Both bounds are included; the config's deposit was before t0.
	first := all[5] // the 1.5 deposit
	s.post(&userC, "/api/v3/account/bills", fmt.Sprintf(`{"after":%d,"before":"%s"}`, t0, first.CTime), &got)
	if len(got) == 0 || got[len(got)-1] != first {
		t.Errorf("bills in [t0, the first deposit]: %+v", got)
	}
	for _, e := range got {
		if e.CTime > first.CTime || e.BizType == "trade_in" {
			t.Errorf("bill after the bound: %+v", e)
		}
	}
	s.post(&userC, "/api/v3/account/bills", fmt.Sprintf(`{"after":%d}`, time.Now().Add(time.Hour).UnixMilli()), &got)
	if len(got) != 0 {
		t.Errorf("bills after an hour from now: %+v", got)
	}

	var page struct {
		Total, PageSize, Pages, Page int64
		HasNextPage                  bool
		Items                        []ledgerEntry
	}
	var funding []string
	for p := 1; p <= 3; p++ {
		s.post(&userC, "/api/v3/account/fundingBills", fmt.Sprintf(`{"pageIndex":%d,"pageSize":2}`, p), &page)
		if page.Total != 5 || page.Pages != 3 || page.Page != int64(p) || page.PageSize != 2 || page.HasNextPage != (p < 3) {
			t.Fatalf("funding page %d: %+v", p, page)
		}
		for _, e := range page.Items {
			funding = append(funding, e.BizType+" "+e.DeltaAmount)
		}
	}
	wantFunding := []string{"withdraw -0.50000000", "deposit 3.50000000", "deposit 2.50000000", "deposit 1.50000000", "deposit 1000000.00000000"}
	if fmt.Sprint(funding) != fmt.Sprint(wantFunding) {
		t.Errorf("funding bills: got %v, want %v", funding, wantFunding)
	}
	s.post(&userC, "/api/v3/account/fundingBills", `{"bizType":"withdraw","coinId":2}`, &page)
	if page.Total != 1 || len(page.Items) != 1 || page.Items[0].BizType != "withdraw" {
		t.Errorf("funding withdrawals: %+v", page)
	}
}
