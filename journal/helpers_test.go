package journal

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weexcore/exchange/engine"
)

func init() { testHooks = true }

const feeUID = 1

func testCoins() []engine.Coin {
	return []engine.Coin{
		{ID: 0, Name: "BTC", ExternalID: 1, Scale: 8},
		{ID: 1, Name: "ETH", ExternalID: 2, Scale: 8},
		{ID: 2, Name: "USDT", ExternalID: 3, Scale: 6},
	}
}

func testMarkets(tb testing.TB, coins []engine.Coin) []*engine.MarketSpec {
	var ms []*engine.MarketSpec
	for i, p := range [][2]int{{0, 2}, {1, 2}, {1, 0}} {
		base, quote := coins[p[0]], coins[p[1]]
		c := engine.SpotConfig{
			Symbol: base.Name + quote.Name, BaseAsset: base.Name, QuoteAsset: quote.Name,
			TickSize: "0.01", StepSize: "0.0001", MinTradeAmount: "0.0001", MaxTradeAmount: "1000",
			TakerFeeRate: "0.001", MakerFeeRate: "0.0005",
			BuyLimitPriceRatio: "0.5", SellLimitPriceRatio: "0.5",
			MarketBuyLimitSize: "100", MarketSellLimitSize: "100", MarketFallbackPriceRatio: "0.05",
			EnableTrade: true,
		}
		if quote.Name == "BTC" {
			c.TickSize = "0.0001"
		}
		s, err := engine.NewMarketSpec(engine.MarketID(i), c, base, quote)
		if err != nil {
			tb.Fatal(err)
		}
		ms = append(ms, s)
	}
	return ms
}

func testOptions(tb testing.TB, dir string) Options {
	coins := testCoins()
	return Options{Dir: dir, Shards: 2, Coins: coins, Markets: testMarkets(tb, coins), FeeUID: feeUID,
		Logf: func(f string, a ...any) { tb.Logf(f, a...) }}
}

// newTestFS returns a journalFS on a new directory, with 1 MiB spares,
// closed when the test ends.
func newTestFS(t *testing.T) (*journalFS, string) {
	t.Helper()
	dir := t.TempDir()
	w, err := newJournalFS(vfs.Default, dir, 1<<20, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	return w, dir
}

func deadline() time.Time { return time.Now().Add(10 * time.Second) }

// do submits c and waits for it.
func do(tb testing.TB, n *Node, c engine.Cmd) (engine.Out, uint64) {
	tb.Helper()
	r := AcquireRequest()
	r.Cmd = c
	for {
		err := n.Submit(r)
		if err == ErrBusy {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			tb.Fatalf("submit %+v: %v", c, err)
		}
		break
	}
	if err := r.Wait(deadline()); err != nil {
		tb.Fatalf("wait %+v: %v", c, err)
	}
	out, seq := r.Out, r.Seq
	if r.HasOrder { // as the engine answered it: the order is its only update kept
		out.Updates, out.OrderAt = []engine.OrderView{r.Order}, 1
	}
	ReleaseRequest(r)
	return out, seq
}

func addUser(tb testing.TB, n *Node, uid int64) engine.UserIdx {
	tb.Helper()
	r := AcquireRequest()
	r.Cmd = engine.Cmd{Kind: engine.CmdAddUser, UID: uid}
	if err := n.Submit(r); err != nil {
		tb.Fatal(err)
	}
	if err := r.Wait(deadline()); err != nil {
		tb.Fatal(err)
	}
	if r.Out.Reject != engine.OK {
		tb.Fatalf("add user %d: %v", uid, r.Out.Reject)
	}
	u := r.Cmd.User
	ReleaseRequest(r)
	return u
}

func mustOK(tb testing.TB, what string, out engine.Out) {
	tb.Helper()
	if out.Reject != engine.OK {
		tb.Fatalf("%s: got %v, want OK", what, out.Reject)
	}
}

func hashString(h [32]byte) string { return fmt.Sprintf("%x", h[:8]) }
