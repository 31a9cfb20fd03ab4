package edge

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// seedFile keeps the credential seeds of admin-created users beside the
// journal. The seed is also journaled in the user's CmdAddUser, but a
// restart from a snapshot does not replay that command (OnAddUser only
// sees commands after the snapshot), so the edge keeps its own durable
// copy: one line "uid hexseed", appended and synced before the admin
// request is answered. (Requested from journal/engine: keep the seed in
// the accounts snapshot, or call OnAddUser for snapshotted users.)
type seedFile struct {
	mu   sync.Mutex // guards f
	f    *os.File
	path string
}

const seedFileName = "edge-user-seeds"

// openSeedFile reads the existing seeds (uid -> seed) and opens the file
// for appending.
func openSeedFile(dir string) (*seedFile, map[int64][]byte, error) {
	path := filepath.Join(dir, seedFileName)
	seeds := map[int64][]byte{}
	if b, err := os.ReadFile(path); err == nil {
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			uidS, seedS, ok := strings.Cut(sc.Text(), " ")
			uid, err1 := strconv.ParseInt(uidS, 10, 64)
			seed, err2 := hex.DecodeString(seedS)
			if !ok || err1 != nil || err2 != nil || len(seed) != seedLen {
				continue // a torn last line from a crash: that request was never answered
			}
			seeds[uid] = seed
		}
	} else if !os.IsNotExist(err) {
		return nil, nil, fmt.Errorf("edge: %v", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("edge: %v", err)
	}
	return &seedFile{f: f, path: path}, seeds, nil
}

// record appends uid's seed durably.
func (s *seedFile) record(uid int64, seed []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := strconv.FormatInt(uid, 10) + " " + hex.EncodeToString(seed) + "\n"
	if _, err := s.f.WriteString(line); err != nil {
		return err
	}
	return s.f.Sync()
}

func (s *seedFile) close() error { return s.f.Close() }
