package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// rebateRecord is the seed's rebate record (2.12).
type rebateRecord struct {
	Symbol                string `json:"symbol"`
	DealAmount            string `json:"dealAmount"`
	Fee                   string `json:"fee"`
	FeeDeduction          string `json:"feeDeduction"`
	RebateRate            string `json:"rebateRate"`
	CommissionAsset       string `json:"commissionAsset"`
	Commission            string `json:"commission"`
	TotalRebateUsdtAmount string `json:"totalRebateUsdtAmount"`
	SettleStartTime       string `json:"settleStartTime"`
	SettleEndTime         string `json:"settleEndTime"`
	UpdateTime            string `json:"updateTime"`
}

type rebatePage struct {
	Current int64          `json:"current"`
	Pages   int64          `json:"pages"`
	Size    int64          `json:"size"`
	Total   int64          `json:"total"`
	Records []rebateRecord `json:"records"`
}

// rebateConfig writes the e2e config with two brokers: A and the ccxt
// user referred by the first, nobody by the second.
func rebateConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/e2e.json")
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	users := c["users"].([]any)
	for _, u := range users {
		u := u.(map[string]any)
		switch u["uid"].(float64) {
		case 10001:
			u["referrerUid"] = 20001
		case 10004:
			u["referrerUid"] = 20002
		}
	}
	c["users"] = append(users,
		map[string]any{"uid": 20001, "apiKey": "key-br1", "secretKey": "secret-br1", "passphrase": "pass-br1", "broker": true, "rebateRate": "0.25"},
		map[string]any{"uid": 20002, "apiKey": "key-br2", "secretKey": "secret-br2", "passphrase": "pass-br2", "broker": true, "rebateRate": "0.5"})
	out, _ := json.Marshal(c)
	p := filepath.Join(t.TempDir(), "rebate.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	broker1 = user{20001, "key-br1", "secret-br1", "pass-br1"}
	broker2 = user{20002, "key-br2", "secret-br2", "pass-br2"}
)

// TestRebates: referred users trade on one day of the dev clock, the clock
// passes midnight, the settler pays; the records answer with every field,
// page, filter and refuse as docs/API.md says; the brokers' balances and
// rebate bills show the payment; an operator's settlement pays nothing
// more; a restart keeps it all.
func TestRebates(t *testing.T) {
	cfg := rebateConfig(t)
	s := startServerConfig(t, cfg, "", "-dev-clock")
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1) // tomorrow, UTC
	date := day.Format("2006-01-02")
	setClock := func(at time.Time) resp {
		return s.do(req{method: "POST", path: "/admin/v1/clock", body: fmt.Sprintf(`{"nowMs":%d}`, at.UnixMilli()), admin: true})
	}
	if res := setClock(day.Add(12 * time.Hour)); res.status != 200 {
		t.Fatalf("clock: %d %s", res.status, res.body)
	}

	// BTCUSDT at 50000 (maker 0.08%, taker 0.1%): A buys 0.1 BTC as
	// maker, its fee 0.00008 BTC = 4 USDT; the ccxt user buys 0.01 as
	// taker, 0.00001 BTC = 0.5 USDT. ETHUSDT: A sells 1 ETH at 3000 as
	// taker, its fee 3 USDT. B is referred by nobody.
	var o order
	s.post(&userA, "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "0.1", "50000", ""), &o)
	s.post(&userB, "/api/v3/order", placeBody("BTCUSDT", "SELL", "LIMIT", "0.11", "50000", ""), &o)
	s.post(&userCCXT, "/api/v3/order", placeBody("BTCUSDT", "BUY", "LIMIT", "0.01", "50000", ""), &o)
	s.post(&userB, "/api/v3/order", placeBody("ETHUSDT", "BUY", "LIMIT", "1", "3000", ""), &o)
	s.post(&userA, "/api/v3/order", placeBody("ETHUSDT", "SELL", "LIMIT", "1", "3000", ""), &o)
	if o.Status != "FILLED" {
		t.Fatalf("A's ETH sell: %+v", o)
	}

	wantErr := func(r req, status, code int) {
		t.Helper()
		res := s.do(r)
		var e apiErr
		json.Unmarshal(res.body, &e)
		if res.status != status || e.Code != code {
			t.Errorf("%s %s %s: got %d %s, want %d %d", r.method, r.path, r.body, res.status, res.body, status, code)
		}
	}
	settle := func() (paid, before int) {
		t.Helper()
		var out struct{ Paid, SettledBefore int }
		s.ok(req{method: "POST", path: "/admin/v1/rebate/settle", body: `{"date":"` + date + `"}`, admin: true}, &out)
		return out.Paid, out.SettledBefore
	}
	const path = "/api/v3/apiReferral/rebate/recentRecord"
	wantErr(req{method: "POST", path: "/admin/v1/rebate/settle", body: `{"date":"` + date + `"}`, admin: true}, 400, -1140)
	var pg rebatePage
	s.get(&broker1, path, &pg)
	if pg.Total != 0 || len(pg.Records) != 0 {
		t.Fatalf("records before the day ended: %+v", pg)
	}
	wantErr(req{method: "GET", path: path, u: &userA}, 403, -1052)

	hash := s.stateHash()
	wantErr(req{method: "POST", path: "/admin/v1/clock", body: `{"nowMs":1000}`, admin: true}, 400, -1140)
	if h := s.stateHash(); h != hash {
		t.Fatal("a refused clock move changed the state")
	}
	settledAt := day.Add(24*time.Hour + 30*time.Second)
	if res := setClock(settledAt); res.status != 200 {
		t.Fatalf("clock: %d %s", res.status, res.body)
	}
	// The settler pays by itself once the day has ended.
	for end := time.Now().Add(20 * time.Second); pg.Total == 0 && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		s.get(&broker1, path, &pg)
	}
	wantRecord := func(symbol, deal, fee, commission string) rebateRecord {
		return rebateRecord{Symbol: symbol, DealAmount: deal, Fee: fee, FeeDeduction: "0", RebateRate: "0.25000000",
			CommissionAsset: "USDT", Commission: commission, TotalRebateUsdtAmount: commission,
			SettleStartTime: date + " 00:00:00", SettleEndTime: date + " 23:59:59"}
	}
	want := []rebateRecord{
		wantRecord("BTCUSDT", "5000.00000000", "4.00000000", "1.00000000"),
		wantRecord("ETHUSDT", "3000.00000000", "3.00000000", "0.75000000"),
	}
	checkPage := func(when string, pg rebatePage, current, pages, size, total int64, want ...rebateRecord) {
		t.Helper()
		if pg.Current != current || pg.Pages != pages || pg.Size != size || pg.Total != total || len(pg.Records) != len(want) {
			t.Fatalf("%s: got %+v, want page %d of %d, size %d, total %d, %d records", when, pg, current, pages, size, total, len(want))
		}
		for i, r := range pg.Records {
			upd, err := time.Parse("2006-01-02 15:04:05", r.UpdateTime)
			if err != nil || upd.Before(settledAt.Truncate(time.Second)) || upd.After(settledAt.Add(time.Minute)) {
				t.Errorf("%s: record %d updateTime %q, want just after %v", when, i, r.UpdateTime, settledAt)
			}
			r.UpdateTime = ""
			if r != want[i] {
				t.Errorf("%s: record %d:\n got %+v\nwant %+v", when, i, r, want[i])
			}
		}
	}
	checkPage("broker 1", pg, 1, 1, 100, 2, want...)
	var pg2 rebatePage
	s.get(&broker2, path, &pg2)
	checkPage("broker 2", pg2, 1, 1, 100, 1, rebateRecord{Symbol: "BTCUSDT", DealAmount: "500.00000000", Fee: "0.50000000",
		FeeDeduction: "0", RebateRate: "0.50000000", CommissionAsset: "USDT", Commission: "0.25000000", TotalRebateUsdtAmount: "0.25000000",
		SettleStartTime: date + " 00:00:00", SettleEndTime: date + " 23:59:59"})

	// An operator's settlement of the same day pays nothing more.
	if paid, before := settle(); paid != 0 || before != 3 {
		t.Fatalf("settle again: paid %d, before %d; want 0, 3", paid, before)
	}

	checkAll := func(when string) {
		t.Helper()
		for p, w := range []rebateRecord{want[0], want[1]} {
			s.get(&broker1, fmt.Sprintf("%s?pageSize=1&page=%d", path, p+1), &pg)
			checkPage(when+": page", pg, int64(p+1), 2, 1, 2, w)
		}
		s.get(&broker1, path+"?pageSize=1&page=3", &pg)
		checkPage(when+": past the last page", pg, 3, 2, 1, 2)
		s.get(&broker1, path+"?symbol=ETHUSDT&startTime="+date+"&endTime="+date, &pg)
		checkPage(when+": by symbol and dates", pg, 1, 1, 100, 1, want[1])
		s.get(&broker1, path+"?coin=USDT&productType=SPOT", &pg)
		checkPage(when+": by coin", pg, 1, 1, 100, 2, want...)
		s.get(&broker1, path+"?coin=BTC", &pg)
		checkPage(when+": another coin", pg, 1, 0, 100, 0)
		s.get(&broker1, path+"?productType=FUTURES", &pg)
		checkPage(when+": futures", pg, 1, 0, 100, 0)
		s.get(&broker1, path+"?endTime="+day.AddDate(0, 0, -1).Format("2006-01-02"), &pg)
		checkPage(when+": the day before", pg, 1, 0, 100, 0)
		s.get(&broker1, path+"?startTime="+day.AddDate(0, 0, -89).Format("2006-01-02")+"&endTime="+date, &pg)
		checkPage(when+": 90 days", pg, 1, 1, 100, 2, want...)

		bad := func(query string, status, code int) {
			t.Helper()
			wantErr(req{method: "GET", path: path + query, u: &broker1}, status, code)
		}
		bad("?startTime="+date+"&endTime="+day.AddDate(0, 0, -1).Format("2006-01-02"), 400, -1171)
		bad("?startTime="+day.AddDate(0, 0, -90).Format("2006-01-02")+"&endTime="+date, 400, -1170)
		bad("?pageSize=101", 400, -1140)
		bad("?pageSize=0", 400, -1140)
		bad("?page=0", 400, -1140)
		bad("?startTime=2026-1-01", 400, -1140)
		bad("?productType=MARGIN", 400, -1140)
		bad("?coin=XYZ", 400, -1140)
		bad("?symbol=NOPE", 400, -1121)
		bad("?limit=5", 400, -1140)
		wantErr(req{method: "GET", path: path, u: &userCCXT}, 403, -1052)

		var acct struct {
			Balances []struct{ Asset, Free string } `json:"balances"`
		}
		for _, b := range []struct {
			u    *user
			usdt string
		}{{&broker1, "1.75000000"}, {&broker2, "0.25000000"}} {
			s.get(b.u, "/api/v3/account", &acct)
			got := ""
			for _, x := range acct.Balances {
				if x.Asset == "USDT" {
					got = x.Free
				}
			}
			if got != b.usdt {
				t.Errorf("%s: broker %d's USDT: got %q, want %q", when, b.u.uid, got, b.usdt)
			}
		}
		var bills []struct {
			BizType, DeltaAmount, CoinName string
		}
		s.post(&broker1, "/api/v3/tax/income", `{"bizType":"rebate","month":"`+date[:7]+`"}`, &bills)
		if len(bills) != 2 || bills[0].DeltaAmount != "0.75000000" || bills[1].DeltaAmount != "1.00000000" || bills[0].CoinName != "USDT" {
			t.Errorf("%s: broker 1's rebate bills: %+v", when, bills)
		}
	}
	checkAll("after the settlement")

	// Registration: a rate is a broker's, from 0 to 1.
	s.ok(req{method: "POST", path: "/admin/v1/users", body: `{"broker":true,"rebateRate":"0.3","referrerUid":20001}`, admin: true}, nil)
	wantErr(req{method: "POST", path: "/admin/v1/users", body: `{"rebateRate":"0.3"}`, admin: true}, 400, -1140)
	wantErr(req{method: "POST", path: "/admin/v1/users", body: `{"broker":true,"rebateRate":"1.5"}`, admin: true}, 400, -1140)
	wantErr(req{method: "POST", path: "/admin/v1/rebate/settle", body: `{"date":"tomorrow"}`, admin: true}, 400, -1140)

	hash = s.stateHash()
	s.stop()
	// Restarted without the dev clock: its path is unknown, the exchange's
	// time stays where the journal left it, and everything is kept.
	s = startServerConfig(t, cfg, s.dataDir)
	if h := s.stateHash(); h != hash {
		t.Fatalf("state hash after restart: %s, want %s", h, hash)
	}
	wantErr(req{method: "POST", path: "/admin/v1/clock", body: `{"nowMs":1}`, admin: true}, 404, -1000)
	checkAll("after the restart")
	if paid, before := settle(); paid != 0 || before != 3 {
		t.Fatalf("settle after the restart: paid %d, before %d; want 0, 3", paid, before)
	}
}

// TestFuturesRebates: a referred user's contract fees are settled as
// productType FUTURES: the record through the endpoint, the commission
// out of the fee account's futures wallet into the broker's spot wallet.
func TestFuturesRebates(t *testing.T) {
	cfg := rebateConfig(t)
	s := startServerConfig(t, cfg, "", "-dev-clock")
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	date := day.Format("2006-01-02")
	clock := func(at time.Time) {
		t.Helper()
		if res := s.do(req{method: "POST", path: "/admin/v1/clock", body: fmt.Sprintf(`{"nowMs":%d}`, at.UnixMilli()), admin: true}); res.status != 200 {
			t.Fatalf("clock: %d %s", res.status, res.body)
		}
	}
	clock(day.Add(12 * time.Hour))
	// A (referred by broker 1, 25%) opens LONG 0.1 at 30000 as maker: fee
	// 0.02% of 3000 = 0.6 USDT; B (no broker) opens SHORT as taker: 1.8.
	var o struct{ Status string }
	s.post(&userA, "/capi/v3/order", `{"symbol":"BTCUSDT","side":"BUY","positionSide":"LONG","type":"LIMIT","quantity":"0.1","price":"30000"}`, &o)
	s.post(&userB, "/capi/v3/order", `{"symbol":"BTCUSDT","side":"SELL","positionSide":"SHORT","type":"LIMIT","quantity":"0.1","price":"30000"}`, &o)
	if o.Status != "FILLED" {
		t.Fatalf("B's short: %+v", o)
	}
	clock(day.Add(24*time.Hour + 30*time.Second))
	const path = "/api/v3/apiReferral/rebate/recentRecord?productType=FUTURES"
	var pg rebatePage
	for end := time.Now().Add(20 * time.Second); pg.Total == 0 && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		s.get(&broker1, path, &pg)
	}
	if pg.Total != 1 || len(pg.Records) != 1 {
		t.Fatalf("futures records: %+v", pg)
	}
	r := pg.Records[0]
	r.UpdateTime = ""
	want := rebateRecord{Symbol: "BTCUSDT", DealAmount: "3000.00000000", Fee: "0.60000000", FeeDeduction: "0", RebateRate: "0.25000000",
		CommissionAsset: "USDT", Commission: "0.15000000", TotalRebateUsdtAmount: "0.15000000",
		SettleStartTime: date + " 00:00:00", SettleEndTime: date + " 23:59:59"}
	if r != want {
		t.Fatalf("futures record:\n got %+v\nwant %+v", r, want)
	}
	s.get(&broker1, "/api/v3/apiReferral/rebate/recentRecord?productType=SPOT", &pg)
	if pg.Total != 0 {
		t.Fatalf("spot records: %+v", pg)
	}
	s.get(&broker1, "/api/v3/apiReferral/rebate/recentRecord?productType=FUTURES&symbol=BTCUSDT", &pg)
	if pg.Total != 1 {
		t.Fatalf("futures records by symbol: %+v", pg)
	}
	var bals []struct{ Wallet, Coin, Available, Frozen string }
	s.ok(req{method: "GET", path: "/admin/v1/balances?uid=20001", admin: true}, &bals)
	if bals[1].Coin != "USDT" || bals[1].Wallet != "spot" || bals[1].Available != "0.15000000" {
		t.Fatalf("broker 1's balances: %+v", bals)
	}
	s.ok(req{method: "GET", path: "/admin/v1/balances?uid=1", admin: true}, &bals)
	if bals[4].Coin != "USDT" || bals[4].Wallet != "futures" || bals[4].Available != "2.25000000" {
		t.Fatalf("the fee account's balances: %+v", bals)
	}
}
