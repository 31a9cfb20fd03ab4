package core

import (
	"fmt"
	"sync"

	"github.com/weexcore/exchange/engine"
)

// invariantsMu serializes the shards in builds with -tags invariants, so
// that the whole state can be checked after every command: a shard holds
// it while it applies a command and checks the state, and while it makes
// credits available (Flush), the only other writes to the shared
// balances. Between two commands every engine's books are consistent and
// its unflushed credits are counted by engine.CheckInvariants.
var invariantsMu sync.Mutex

// applyChecked applies c on s and checks the whole state; a violation
// panics with the command that broke it.
func (n *Node) applyChecked(s *shard, c *engine.Cmd) {
	invariantsMu.Lock()
	defer invariantsMu.Unlock()
	s.eng.Apply(c, s.seq, s.timeMs, &s.out)
	if err := engine.CheckInvariants(n.st.Accounts, n.st.Engines); err != nil {
		panic(fmt.Sprintf("core: invariant violated after shard %d seq %d (%+v): %v", s.id, s.seq, *c, err))
	}
}
