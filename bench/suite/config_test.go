package suite

import (
	"testing"

	"github.com/weexcore/exchange/bench/load"
	"github.com/weexcore/exchange/config"
)

// The benchmark's config must be one the server accepts, with rate limits
// off.
func TestServerConfigParses(t *testing.T) {
	b, err := ServerConfig(load.DefaultMarkets(), "tok")
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.ParseConfig(b)
	if err != nil {
		t.Fatalf("config.ParseConfig: %v\n%s", err, b)
	}
	if c.RateLimits.Enabled {
		t.Errorf("rate limits enabled, want disabled")
	}
	if got, want := len(c.Spot), len(load.DefaultMarkets()); got != want {
		t.Errorf("%d markets, want %d", got, want)
	}
}

// With contracts: config/default.json's shape, an insurance account, each
// contract's index the spot market of its name.
func TestServerConfigWithContracts(t *testing.T) {
	b, err := ServerConfigWith(load.DefaultMarkets(), load.DefaultContracts(), "tok")
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.ParseConfig(b)
	if err != nil {
		t.Fatalf("config.ParseConfig: %v\n%s", err, b)
	}
	if got, want := len(c.Contracts), len(load.DefaultContracts()); got != want {
		t.Fatalf("%d contracts, want %d", got, want)
	}
	for i, k := range c.Contracts {
		m := load.DefaultContracts()[i]
		if k.Symbol != m.Symbol || k.V2Symbol != m.V2Symbol || k.IndexSymbol != m.Symbol || k.TickSize != m.TickSize() || k.StepSize != m.StepSize() {
			t.Errorf("contract %d: %+v, want %s/%s tick %s step %s", i, k.ContractConfig, m.Symbol, m.V2Symbol, m.TickSize(), m.StepSize())
		}
	}
	// without the spot market of its name a contract has no index
	b, err = ServerConfigWith(load.DefaultMarkets()[2:3], load.DefaultContracts(), "tok")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.ParseConfig(b); err != nil {
		t.Fatalf("config.ParseConfig (SOLUSDT and the contracts): %v", err)
	}
}

func TestShellJoin(t *testing.T) {
	if got, want := shellJoin([]string{"test", "-run", "^$", "-bench", "Mixed", "a b"}), `test -run '^$' -bench Mixed 'a b'`; got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
}
