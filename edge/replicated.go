package edge

import (
	"sync/atomic"

	"github.com/valyala/fasthttp"

	"github.com/weexcore/exchange/core"
)

// A replicated node's edge (docs/REPLICATION.md): a follower answers
// public reads and refuses signed requests (writes and private reads) with
// 503 -1054 and X-LEADER, the leader's REST address when one is known.
// The leader takes them once it has caught up and registered the config's
// users (bootstrap). A single node never gets here: s.repl is nil.

type replEdge struct {
	leaderREST map[uint64]string // member id -> REST address (host:port)
	serving    atomic.Bool       // leading, bootstrapped: signed requests are taken
}

var errNotLeader = newErr(503, codeBusy, "not the leader: this node serves public market data only; "+
	"send writes and private requests to the leader (header X-LEADER), or retry while it is elected")

// startReplicated is Start for a member of a raft group.
func (s *Server) startReplicated(node *core.Node) error {
	if err := registerAll(s.registry, node.Collectors()); err != nil {
		return err
	}
	s.ready.Store(true)
	go func() {
		select {
		case <-node.WritableCh():
		case <-node.Deposed():
			return
		}
		// Seeding (the config's deposits) is done once the fee account is
		// registered, which bootstrap does last: a leader that died in the
		// middle of it leaves the next one to finish it (deposits already
		// credited are skipped: nothing else moves money before).
		_, seeded := node.Accounts().Lookup(s.cfg.FeeUID)
		seeding := !seeded
		if err := s.bootstrap(seeding); err != nil {
			s.log.Error("edge: bootstrap as the new leader failed; signed requests stay refused", "err", err)
			return
		}
		s.repl.serving.Store(true)
		s.log.Info("edge: leading: taking writes", "seeded", seeding)
	}()
	return nil
}

// replGate refuses a signed request on a node that does not serve them.
func (s *Server) replGate(ctx *fasthttp.RequestCtx) *apiError {
	if s.repl.serving.Load() && s.node.Writable() {
		return nil
	}
	return errNotLeader
}

// leaderHeader names the leader's REST address on an errNotLeader answer.
func (s *Server) leaderHeader(ctx *fasthttp.RequestCtx) {
	if s.repl == nil || s.node == nil {
		return
	}
	if a, ok := s.repl.leaderREST[s.node.LeaderID()]; ok {
		ctx.Response.Header.Set("X-LEADER", a)
	}
}

// replReady: /readyz of a member waits for a known leader.
func (s *Server) replReady() bool {
	return s.repl == nil || (s.node != nil && s.node.LeaderID() != 0)
}
