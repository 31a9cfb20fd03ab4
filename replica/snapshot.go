package replica

import "fmt"

// A state machine whose state runs ahead of the commit index (core's
// leader applies before it proposes) cannot be snapshotted from the
// loop, between two entries: its snapshot is taken by the caller at a
// point it knows the index of (core: at a barrier, the last entry whose
// batches are journaled), and handed over with SnapshotAt. Such a caller
// sets Config.SnapshotEntries out of reach, so the loop never calls
// StateMachine.Snapshot.

type snapReq struct {
	index uint64
	data  []byte
	res   chan error
}

// SnapshotAt records data as the state machine's snapshot at index (the
// state after the entry at index, which must be applied) and compacts the
// log behind it, keeping Config.CompactKeep entries. A snapshot at or
// before the newest one is ignored.
func (g *Group) SnapshotAt(index uint64, data []byte) error {
	req := snapReq{index: index, data: data, res: make(chan error, 1)}
	select {
	case g.snapc <- req:
		return <-req.res
	case <-g.done:
		return g.closedErr()
	}
}

func (n *node) snapshotAt(index uint64, data []byte) error {
	if index <= n.lastSnap {
		return nil
	}
	if index > n.applied {
		return fmt.Errorf("replica: a snapshot at %d, past the applied index %d", index, n.applied)
	}
	if err := n.st.CreateSnapshot(index, n.conf, data); err != nil {
		return fmt.Errorf("replica: store snapshot at %d: %w", index, err)
	}
	n.lastSnap = index
	if index > n.cfg.CompactKeep {
		to := index - n.cfg.CompactKeep
		if first, _ := n.st.FirstIndex(); to >= first {
			if err := n.st.Compact(to); err != nil {
				return fmt.Errorf("replica: compact the log to %d: %w", to, err)
			}
		}
	}
	return nil
}
