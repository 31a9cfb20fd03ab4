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

func TestShellJoin(t *testing.T) {
	if got, want := shellJoin([]string{"test", "-run", "^$", "-bench", "Mixed", "a b"}), `test -run '^$' -bench Mixed 'a b'`; got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
}
