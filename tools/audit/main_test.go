package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

func TestAudit(t *testing.T) {
	coins := []engine.Coin{{ID: 0, Name: "BTC", ExternalID: 1, Scale: 8}, {ID: 1, Name: "USDT", ExternalID: 2, Scale: 6}}
	spec, err := engine.NewMarketSpec(0, engine.SpotConfig{Symbol: "BTCUSDT", BaseAsset: "BTC", QuoteAsset: "USDT",
		TickSize: "0.01", StepSize: "0.0001", MinTradeAmount: "0.0001", MaxTradeAmount: "1000",
		TakerFeeRate: "0.001", MakerFeeRate: "0.0005", BuyLimitPriceRatio: "0.5", SellLimitPriceRatio: "0.5",
		MarketBuyLimitSize: "100", MarketSellLimitSize: "100", MarketFallbackPriceRatio: "0.05", EnableTrade: true},
		coins[0], coins[1])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n, err := journal.Open(journal.Options{Dir: dir, Shards: 1, Coins: coins, Markets: []*engine.MarketSpec{spec}, FeeUID: 1})
	if err != nil {
		t.Fatal(err)
	}
	users := map[int64]engine.UserIdx{}
	do := func(c engine.Cmd) engine.Out {
		r := journal.AcquireRequest()
		defer journal.ReleaseRequest(r)
		r.Cmd = c
		if err := n.Submit(r); err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if r.Out.Reject != engine.OK {
			t.Fatalf("%+v: %v", c, r.Out.Reject)
		}
		if c.Kind == engine.CmdAddUser {
			users[c.UID] = r.Cmd.User
		}
		return r.Out
	}
	for _, uid := range []int64{1, 10, 20} {
		do(engine.Cmd{Kind: engine.CmdAddUser, UID: uid})
	}
	do(engine.Cmd{Kind: engine.CmdDeposit, User: users[10], UID: 10, Coin: 1, Amount: 1_000_000_000})
	do(engine.Cmd{Kind: engine.CmdDeposit, User: users[20], UID: 20, Coin: 0, Amount: 100_000_000})
	do(engine.Cmd{Kind: engine.CmdPlace, User: users[10], UID: 10, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 5000})
	do(engine.Cmd{Kind: engine.CmdPlace, User: users[20], UID: 20, Side: engine.Sell, Type: engine.Limit, TIF: engine.GTC, Price: 10000, Qty: 2000})
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := compareReplays(dir, false); err != nil {
		t.Fatal(err)
	}
	for _, csv := range []bool{false, true} {
		tp, bp := filepath.Join(t.TempDir(), "trades"), filepath.Join(t.TempDir(), "bills")
		if err := run(dir, csv, tp, bp, csv, false); err != nil {
			t.Fatalf("audit (csv %v): %v", csv, err)
		}
		tb, _ := os.ReadFile(tp)
		bb, _ := os.ReadFile(bp)
		wantT, wantB := 1, 2+4+1 // one trade; two deposits, in/out for both sides, fee income
		if csv {
			wantT++
			wantB++
		}
		if got := bytes.Count(tb, []byte("\n")); got != wantT {
			t.Errorf("csv %v: trades: got %d lines, want %d:\n%s", csv, got, wantT, tb)
		}
		if got := bytes.Count(bb, []byte("\n")); got < wantB-1 {
			t.Errorf("csv %v: bills: got %d lines, want about %d:\n%s", csv, got, wantB, bb)
		}
		t.Logf("trades:\n%sbills:\n%s", tb, bb)
	}
}
