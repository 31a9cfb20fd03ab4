package edge

import (
	"testing"
	"time"

	"github.com/weexcore/exchange/config"
	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// TestSeedingResumesAfterCrash: a first start cut short after registering
// the config's users and crediting part of their deposits (the directory
// stays "seeding") credits the rest on the next start, and nothing twice;
// starts after that credit nothing.
func TestSeedingResumesAfterCrash(t *testing.T) {
	cfg, err := config.ParseConfig(config.Default)
	if err != nil {
		t.Fatal(err)
	}
	coins, specs, err := cfg.EngineSpecs()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	u := cfg.Users[0]

	// The cut-short first start: every user registered, u's first
	// configured deposit credited, then the process dies.
	n, err := core.Start(journal.Options{Dir: dir}, journal.LoadOptions{Coins: coins, Markets: specs, FeeUID: cfg.FeeUID, InsuranceUID: cfg.InsuranceUID}, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(c engine.Cmd) {
		t.Helper()
		r := core.AcquireRequest()
		r.Cmd = c
		if err := n.Submit(r); err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(time.Now().Add(10 * time.Second)); err != nil || r.Out.Reject != engine.OK {
			t.Fatalf("%+v: %v %v", c, err, r.Out.Reject)
		}
		core.ReleaseRequest(r)
	}
	run(engine.Cmd{Kind: engine.CmdAddUser, UID: cfg.FeeUID, User: noUser})
	for _, v := range cfg.Users {
		run(engine.Cmd{Kind: engine.CmdAddUser, UID: v.UID, User: noUser})
	}
	idx, _ := n.Accounts().Lookup(u.UID)
	want := map[engine.CoinID]engine.Amount{}
	first := true
	for ci, co := range cfg.Coins {
		amt, ok := u.Deposits[co.Coin]
		if !ok {
			continue
		}
		v, _ := engine.ParseFixed([]byte(amt), co.Scale)
		want[engine.CoinID(ci)] = engine.Amount(v)
		if first {
			run(engine.Cmd{Kind: engine.CmdDeposit, User: idx, UID: u.UID, Coin: engine.CoinID(ci), Amount: engine.Amount(v)})
			first = false
		}
	}
	if len(want) < 2 {
		t.Fatalf("the demo user has %d deposits configured; the test needs two or more", len(want))
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	for start := 0; start < 2; start++ {
		s, close := openServer(t, cfg, dir)
		if s.store.Seeding() {
			t.Errorf("start %d: still seeding after a complete bootstrap", start)
		}
		acc := s.node.Accounts()
		for c, amt := range want {
			if avail, frozen := acc.Balance(idx, c); avail+frozen != amt {
				t.Errorf("start %d: uid %d coin %d: got %d, want the configured %d once", start, u.UID, c, avail+frozen, amt)
			}
		}
		close()
	}
}
