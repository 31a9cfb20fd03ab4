package core

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weexcore/exchange/engine"
)

// randomLoad registers users and runs workers*perWorker random commands
// through n from concurrent goroutines, in bursts.
func randomLoad(t testing.TB, n *Node, workers, perWorker int, seed int64) {
	users := []engine.UserIdx{0}
	uids := []int64{0}
	for i := 0; i <= 16; i++ {
		uid := int64(feeUID)
		if i > 0 {
			uid = int64(100 + i)
		}
		u, ok := n.Accounts().Lookup(uid)
		if !ok {
			u = addUser(t, n, uid)
		}
		if i > 0 {
			users, uids = append(users, u), append(uids, uid)
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(rng *rand.Rand) {
			defer wg.Done()
			var working []engine.Cmd
			reqs := make([]*Request, 0, 32)
			for done := 0; done < perWorker; {
				reqs = reqs[:0]
				for k := 1 + rng.Intn(32); k > 0 && done < perWorker; k-- {
					i := 1 + rng.Intn(len(users)-1)
					r := AcquireRequest()
					r.Cmd = randomCmd(rng, users[i], uids[i], &working)
					if err := n.Submit(r); err != nil {
						ReleaseRequest(r)
						time.Sleep(100 * time.Microsecond)
						continue
					}
					done++
					reqs = append(reqs, r)
				}
				for _, r := range reqs {
					if err := r.Wait(deadline()); err != nil {
						t.Error(err)
					} else if r.Cmd.Kind == engine.CmdPlace && r.HasOrder && r.Order.Status.Working() && len(working) < 64 {
						working = append(working, engine.Cmd{Market: r.Cmd.Market, User: r.Cmd.User, UID: r.Cmd.UID, OrderID: r.Order.OrderID})
					}
					ReleaseRequest(r)
				}
			}
		}(rand.New(rand.NewSource(seed + int64(w))))
	}
	wg.Wait()
}

const envReplayDir = "JOURNAL_REPLAY_DIR"

// TestReplayChild prints the hashes of a read-only replay of
// JOURNAL_REPLAY_DIR (full and from the snapshot); skipped normally.
func TestReplayChild(t *testing.T) {
	dir := os.Getenv(envReplayDir)
	if dir == "" {
		t.Skip("replay helper process")
	}
	for _, full := range []bool{true, false} {
		st, err := loadRO(dir, full)
		if err != nil {
			fmt.Printf("ERR %v\n", err)
			os.Exit(3)
		}
		fmt.Printf("HASH full=%v %x\n", full, st.Hash())
	}
	os.Exit(0)
}

// TestReplayDeterminism: the live state hash, a full replay, a snapshot
// plus tail replay, and replays in child processes with GOMAXPROCS=1 and 2
// all agree.
func TestReplayDeterminism(t *testing.T) {
	if os.Getenv(envReplayDir) != "" {
		t.Skip("inside a child")
	}
	dir := t.TempDir()
	o := testOptions(t, dir)
	o.Logf = nil
	n, err := openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	randomLoad(t, n, 4, 3000, 1)
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	randomLoad(t, n, 4, 3000, 2)
	live, seqs, err := n.State(deadline())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Check(deadline()); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "img")
	crashImage(t, n, img) // snapshot in the middle, journal tail after it
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("live hash %s, seqs %v", hashString(live), seqs)
	hashes := map[string]string{}
	for _, full := range []bool{true, false} {
		ro, err := loadRO(img, full)
		if err != nil {
			t.Fatal(err)
		}
		h, s := ro.Hash(), ro.Seqs
		if err := engine.CheckInvariants(ro.Accounts, ro.Engines); err != nil {
			t.Errorf("full=%v: %v", full, err)
		}
		if !equalSeqs(s, seqs) {
			t.Errorf("full=%v: seqs %v, want %v", full, s, seqs)
		}
		hashes[fmt.Sprintf("in-process full=%v", full)] = fmt.Sprintf("%x", h)
	}
	for _, procs := range []string{"1", "2"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReplayChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), envReplayDir+"="+img, "GOMAXPROCS="+procs)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child GOMAXPROCS=%s: %v\n%s", procs, err, out)
		}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "HASH" {
				hashes["GOMAXPROCS="+procs+" "+f[1]] = f[2]
			}
		}
	}
	if len(hashes) != 6 {
		t.Fatalf("got %d hashes, want 6: %v", len(hashes), hashes)
	}
	want := fmt.Sprintf("%x", live)
	for k, h := range hashes {
		if h != want {
			t.Errorf("%s: hash %s, want the live hash %s", k, h[:16], want[:16])
		}
	}
}
