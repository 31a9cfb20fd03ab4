package journal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/engine"
)

// TestScaleFixed: a config that changes a stored market's tick or step
// size, a coin of a market, or a coin's scale is refused with the market
// (or coin) and the field named, and the directory still opens as it was.
func TestScaleFixed(t *testing.T) {
	img, want, _ := image(t, 3, 9)
	respec := func(t *testing.T, m int, f func(c *engine.SpotConfig)) []*engine.MarketSpec {
		o := testLoadOptions(t)
		base, quote := o.Coins[o.Markets[m].Base], o.Coins[o.Markets[m].Quote]
		c := engine.SpotConfig{Symbol: o.Markets[m].Symbol, BaseAsset: base.Name, QuoteAsset: quote.Name,
			TickSize: "0.01", StepSize: "0.0001", MinTradeAmount: "0.001", MaxTradeAmount: "1000",
			TakerFeeRate: "0.001", MakerFeeRate: "0.0005", BuyLimitPriceRatio: "0.5", SellLimitPriceRatio: "0.5",
			MarketBuyLimitSize: "100", MarketSellLimitSize: "100", MarketFallbackPriceRatio: "0.05", EnableTrade: true}
		f(&c)
		s, err := engine.NewMarketSpec(engine.MarketID(m), c, o.Coins[coinID(o.Coins, c.BaseAsset)], o.Coins[coinID(o.Coins, c.QuoteAsset)])
		if err != nil {
			t.Fatal(err)
		}
		o.Markets[m] = s
		return o.Markets
	}
	for _, tc := range []struct {
		name, want string
		o          func(t *testing.T) LoadOptions
	}{
		{"tick", "market BTCUSDT: tickSize", func(t *testing.T) LoadOptions {
			o := testLoadOptions(t)
			o.Markets = respec(t, 0, func(c *engine.SpotConfig) { c.TickSize = "0.1" })
			return o
		}},
		{"step", "market ETHUSDT: stepSize", func(t *testing.T) LoadOptions {
			o := testLoadOptions(t)
			o.Markets = respec(t, 1, func(c *engine.SpotConfig) { c.StepSize = "0.001" })
			return o
		}},
		{"base", "market BTCUSDT: baseAsset", func(t *testing.T) LoadOptions {
			o := testLoadOptions(t)
			o.Markets = respec(t, 0, func(c *engine.SpotConfig) { c.BaseAsset = "ETH" })
			return o
		}},
		{"coin scale", "coin USDT: scale 8", func(t *testing.T) LoadOptions {
			o := testLoadOptions(t)
			o.Coins[2].Scale = 8
			return o
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			copyDir(t, img, dir)
			s, err := Open(Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Load(tc.o(t)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("load with the %s changed: got %v, want an error naming %q", tc.name, err, tc.want)
			}
		})
	}
	dir := filepath.Join(t.TempDir(), "d")
	copyDir(t, img, dir)
	s, st, err := openLoad(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st.Hash() != want {
		t.Fatalf("after the refusals: hash %s, want %s", hashString(st.Hash()), hashString(want))
	}
}

func coinID(coins []engine.Coin, name string) engine.CoinID {
	for _, c := range coins {
		if c.Name == name {
			return c.ID
		}
	}
	return 0
}

// TestNeverFreshAgain: a directory that has held state (its meta was
// stored once) but whose Pebble data lost the meta is refused, read-write
// and read-only, instead of starting a new exchange over it.
func TestNeverFreshAgain(t *testing.T) {
	img, _, _ := image(t, 2, 6)
	if _, err := os.Stat(filepath.Join(img, markerName)); err != nil {
		t.Fatalf("no marker after the first load: %v", err)
	}
	db := plainDB(t, img, false)
	if err := db.Delete([]byte{pfxMeta}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, _, err := openLoad(t, img, nil); err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), markerName) {
		t.Fatalf("load without the meta: got %v, want ErrCorrupt naming %s", err, markerName)
	}
	if _, err := loadRO(img, false); err == nil || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read-only load without the meta: got %v, want ErrCorrupt", err)
	}
	// Every Pebble file gone: the same.
	ents, _ := os.ReadDir(img)
	for _, e := range ents {
		if e.Name() != markerName {
			os.Remove(filepath.Join(img, e.Name()))
		}
	}
	if _, _, err := openLoad(t, img, nil); err == nil || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("load of an emptied directory: got %v, want ErrCorrupt", err)
	}
}

// TestLocked: a second open of a directory in use says it is locked by
// another process.
func TestLocked(t *testing.T) {
	dir := t.TempDir()
	s, _, err := openLoad(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("second open: got %v, want ErrLocked saying it is locked by another process", err)
	}
}
