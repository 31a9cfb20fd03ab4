package replica

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// kindApplied keys the state machine's applied index, which the caller
// writes in the same batch as the state it applied (core's committer and
// follower apply), so that a restart passes it as Config.Applied.
const kindApplied = 'a'

// AppliedKey is the key of group's applied index in the shared DB.
func AppliedKey(group uint32) []byte { return groupKey(group, kindApplied) }

// AppliedValue encodes an applied index for AppliedKey.
func AppliedValue(index uint64) []byte { return binary.BigEndian.AppendUint64(nil, index) }

// LoadApplied reads group's applied index (0 when none was written).
func LoadApplied(db *pebble.DB, group uint32) (uint64, error) {
	v, c, err := db.Get(AppliedKey(group))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("replica: applied index of %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
