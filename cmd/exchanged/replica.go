package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/weexcore/exchange/core"
)

// replicaFlags turns -node-id, -peers, -peer-rest and -replica-secret into
// the core's and the edge's replication options; all nil without -peers
// (a single node).
func replicaFlags(id uint64, peers, rest, secret string) (*core.ReplicaOptions, map[uint64]string, error) {
	if peers == "" {
		if id != 0 || rest != "" {
			return nil, nil, fmt.Errorf("-node-id and -peer-rest need -peers")
		}
		return nil, nil, nil
	}
	pm, err := parseMembers("-peers", peers)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := pm[id]; !ok {
		return nil, nil, fmt.Errorf("-node-id %d is not in -peers", id)
	}
	rm := map[uint64]string{}
	if rest != "" {
		if rm, err = parseMembers("-peer-rest", rest); err != nil {
			return nil, nil, err
		}
	}
	if secret == "" {
		secret = os.Getenv("EXCHANGED_REPLICA_SECRET")
	}
	if len(secret) < 16 {
		return nil, nil, fmt.Errorf("replication needs a shared secret of at least 16 bytes: -replica-secret or $EXCHANGED_REPLICA_SECRET")
	}
	return &core.ReplicaOptions{ID: id, Peers: pm, Secret: []byte(secret)}, rm, nil
}

// parseMembers parses id=host:port,id=host:port.
func parseMembers(flag, v string) (map[uint64]string, error) {
	m := map[uint64]string{}
	for _, p := range strings.Split(v, ",") {
		k, a, ok := strings.Cut(strings.TrimSpace(p), "=")
		id, err := strconv.ParseUint(k, 10, 64)
		if !ok || err != nil || id == 0 || a == "" {
			return nil, fmt.Errorf("%s: %q is not id=host:port (ids from 1)", flag, p)
		}
		if _, dup := m[id]; dup {
			return nil, fmt.Errorf("%s: member %d twice", flag, id)
		}
		m[id] = a
	}
	return m, nil
}
