package load

import (
	"testing"
)

// Building and signing a request must not allocate in the steady state:
// the generator shares two cores with the server it measures.
func TestNextAllocs(t *testing.T) {
	users := []Cred{{APIKey: "k1", SecretKey: "s1", Passphrase: "p"}, {APIKey: "k2", SecretKey: "s2", Passphrase: "p"}}
	g, err := New(Target{Addr: "127.0.0.1:1", Users: users, Markets: DefaultMarkets(), Conns: 1}, Mix{Place: 0.5, Take: 0.1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	w := g.workers[0]
	w.reset()
	for i := 0; i < 1000; i++ { // warm: signers, buffers, orders to cancel
		w.next()
		w.push(resting{user: 1, market: 2, id: int64(i + 1)})
	}
	if n := testing.AllocsPerRun(1000, func() {
		w.next()
		w.push(resting{user: 0, market: 1, id: 42})
	}); n != 0 {
		t.Errorf("next allocs = %v per request, want 0", n)
	}
}

func BenchmarkNext(b *testing.B) {
	users := []Cred{{APIKey: "k1", SecretKey: "s1", Passphrase: "p"}}
	g, err := New(Target{Addr: "127.0.0.1:1", Users: users, Markets: DefaultMarkets(), Conns: 1}, Mix{Place: 0.5, Take: 0.1, Seed: 3})
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
