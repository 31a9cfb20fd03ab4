package edge

import (
	"testing"
	"time"

	"github.com/weexcore/exchange/config"
	"github.com/weexcore/exchange/core"
	"github.com/weexcore/exchange/journal"
)

// openServer starts the edge for cfg on a node over dir (no listeners),
// as cmd/exchanged wires them; close stops both.
func openServer(tb testing.TB, cfg *config.Config, dir string) (s *Server, close func()) {
	tb.Helper()
	s, err := New(Options{Config: cfg})
	if err != nil {
		tb.Fatal(err)
	}
	coins, specs, err := cfg.EngineSpecs()
	if err != nil {
		tb.Fatal(err)
	}
	n, err := core.Start(journal.Options{Dir: dir}, journal.LoadOptions{Coins: coins, Markets: specs, FeeUID: cfg.FeeUID, InsuranceUID: cfg.InsuranceUID},
		core.Options{OnAddUser: s.OnAddUser})
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Start(n); err != nil {
		n.Close()
		tb.Fatal(err)
	}
	return s, func() {
		if err := s.Shutdown(5 * time.Second); err != nil {
			tb.Error(err)
		}
		if err := n.Close(); err != nil {
			tb.Error(err)
		}
	}
}
