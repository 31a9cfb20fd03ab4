package load

import (
	"testing"
)

// Building and signing a request must not allocate in the steady state:
// the generator shares two cores with the server it measures.
// The same with contract orders in the mix (resting orders of both kinds
// to cancel).
func TestNextAllocs(t *testing.T) {
	for _, share := range []float64{0, 0.3} {
		var contracts []Market
		if share > 0 {
			contracts = DefaultContracts()
		}
		users := []Cred{{APIKey: "k1", SecretKey: "s1", Passphrase: "p"}, {APIKey: "k2", SecretKey: "s2", Passphrase: "p"}}
		g, err := New(Target{Addr: "127.0.0.1:1", Users: users, Markets: DefaultMarkets(), Contracts: contracts, Conns: 1},
			Mix{Place: 0.5, Take: 0.1, Contracts: share, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		w := g.workers[0]
		w.reset()
		last := int32(len(g.markets) - 1) // a contract when there are any
		for i := 0; i < 1000; i++ {       // warm: signers, buffers, orders to cancel
			w.next()
			w.push(resting{user: 1, market: int32(i%2) * last, id: int64(i + 1)})
		}
		if n := testing.AllocsPerRun(1000, func() {
			w.next()
			w.push(resting{user: 0, market: last, id: 42})
		}); n != 0 {
			t.Errorf("contracts %.1f: next allocs = %v per request, want 0", share, n)
		}
	}
}

func BenchmarkNext(b *testing.B) { benchNext(b, 0) }

// BenchmarkNextContracts: 30% of the requests on contracts.
func BenchmarkNextContracts(b *testing.B) { benchNext(b, 0.3) }

func benchNext(b *testing.B, share float64) {
	var contracts []Market
	if share > 0 {
		contracts = DefaultContracts()
	}
	users := []Cred{{APIKey: "k1", SecretKey: "s1", Passphrase: "p"}}
	g, err := New(Target{Addr: "127.0.0.1:1", Users: users, Markets: DefaultMarkets(), Contracts: contracts, Conns: 1},
		Mix{Place: 0.5, Take: 0.1, Contracts: share, Seed: 3})
	if err != nil {
		b.Fatal(err)
	}
	w := g.workers[0]
	w.reset()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.next()
		w.push(resting{user: 0, market: 1, id: int64(i + 1)})
	}
}
