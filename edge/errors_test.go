package edge

import (
	"testing"

	"github.com/weexcore/exchange/engine"
)

// TestRejectTable: every engine reject, OK included, has its answer in the
// edge's one table and a name (a batch element's errorCode); a reject
// added to the engine without them fails here, not in front of a client.
func TestRejectTable(t *testing.T) {
	if len(rejectTable) > engine.NumRejects {
		t.Errorf("rejectTable has %d entries, the engine %d rejects", len(rejectTable), engine.NumRejects)
	}
	for r := engine.Reject(0); int(r) < engine.NumRejects; r++ {
		if int(r) >= len(rejectTable) || rejectTable[r].status == 0 {
			t.Errorf("reject %d (%v) has no entry in rejectTable", r, r)
			continue
		}
		if r.String() == "UNKNOWN" {
			t.Errorf("reject %d has no name", r)
		}
		if ri := rejectTable[r]; r != engine.OK && (ri.code >= 0 || ri.msg == "" || ri.status < 400) {
			t.Errorf("reject %v: %+v is not an error answer", r, ri)
		}
	}
}
