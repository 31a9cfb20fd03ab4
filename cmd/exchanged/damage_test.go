package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weexcore/exchange/config"
	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

var (
	auditOnce sync.Once
	auditBin  string
	auditErr  error
)

// buildAudit builds tools/audit once for the package's tests.
func buildAudit(t *testing.T) string {
	auditOnce.Do(func() {
		auditBin = filepath.Join(filepath.Dir(binPath), "audit")
		out, err := exec.Command("go", "build", "-buildvcs=false", "-o", auditBin, "../../tools/audit").CombinedOutput()
		if err != nil {
			auditErr = fmt.Errorf("building audit: %v\n%s", err, out)
		}
	})
	if auditErr != nil {
		t.Fatal(auditErr)
	}
	return auditBin
}

// TestDamagedDirectory damages copies of a data directory the real server
// wrote and was killed over (kill -9), in every part: byte flips across
// the newest WAL, every table and the manifest, a flip in the newest
// snapshot, and cuts of the WAL at every record boundary and inside
// records. For each, the server's start (the journal's load) either
// refuses with journal.ErrCorrupt or holds every acknowledged order;
// never a silent loss, never a fresh start. The audit tool agrees: it
// fails exactly when the start does, or when it finds damage the start
// did not read.
func TestDamagedDirectory(t *testing.T) {
	audit := buildAudit(t)
	dir := t.TempDir()
	type placed struct {
		uid int64
		sym string
		id  int64
	}
	var acked []placed
	var mu sync.Mutex
	load := func(s *server, from, n int) {
		var wg sync.WaitGroup
		for w, u := range []*user{&userA, &userB} {
			wg.Add(1)
			go func(w int, u *user) {
				defer wg.Done()
				for i := from; i < from+n; i++ {
					sym := []string{"BTCUSDT", "ETHUSDT"}[i%2]
					var o order
					r := s.do(req{method: "POST", path: "/api/v3/order", u: u,
						body: placeBody(sym, "BUY", "LIMIT", "0.01", fmt.Sprint(100+w*1000+i), "")})
					if r.status == 200 && json.Unmarshal(r.body, &o) == nil {
						mu.Lock()
						acked = append(acked, placed{u.uid, sym, o.OrderID})
						mu.Unlock()
					}
				}
			}(w, u)
		}
		wg.Wait()
	}
	// A clean stop (a snapshot), then more orders and kill -9: the
	// directory holds a snapshot in a table, a journal after it and a WAL.
	s := startServer(t, dir, "-shards", "2")
	load(s, 0, 30)
	s.stop()
	s = startServer(t, dir, "-shards", "2")
	load(s, 30, 90)
	s.cmd.Process.Kill()
	<-s.exited
	if len(acked) < 200 {
		t.Fatalf("only %d orders acknowledged", len(acked))
	}

	img := filepath.Join(t.TempDir(), "img")
	if out, err := exec.Command("cp", "-a", dir, img).CombinedOutput(); err != nil { // keeps the WALs' recorded sizes
		t.Fatalf("cp: %v %s", err, out)
	}
	markets := map[string]engine.MarketID{}
	// check loads dir as the server's start does and, when it loads,
	// requires every acknowledged order; it returns the load's error.
	check := func(what, dir string) error {
		st, err := loadDir(dir)
		if err != nil {
			if !errors.Is(err, journal.ErrCorrupt) {
				t.Fatalf("%s: refused with %v, want journal.ErrCorrupt", what, err)
			}
			return err
		}
		if len(markets) == 0 {
			for _, m := range st.Markets {
				if m != nil {
					markets[m.Symbol] = m.ID
				}
			}
		}
		for _, p := range acked {
			u, ok := st.Accounts.Lookup(p.uid)
			m := markets[p.sym]
			if !ok {
				t.Fatalf("%s: uid %d unknown after the load: a fresh start?", what, p.uid)
			}
			if _, ok := st.Engines[st.MarketShard(m)].Order(u, m, p.id, nil); !ok {
				t.Fatalf("%s: acknowledged order %d (%s) missing: a silent loss", what, p.id, p.sym)
			}
		}
		return nil
	}
	// run damages a copy of img with f and checks the start and the audit.
	var refused, whole int
	work := filepath.Join(t.TempDir(), "work")
	run := func(what string, f func(dir string)) {
		os.RemoveAll(work)
		if out, err := exec.Command("cp", "-a", img, work).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		f(work)
		loadErr := check(what, work)
		out, auditErr := exec.Command(audit, "-dir", work).CombinedOutput()
		switch {
		case loadErr != nil && auditErr == nil:
			t.Fatalf("%s: the start refuses (%v), the audit passes:\n%s", what, loadErr, out)
		case loadErr == nil && auditErr != nil && !bytes.Contains(out, []byte("storage\tDAMAGED")):
			t.Fatalf("%s: the start loads, the audit fails (%v):\n%s", what, auditErr, out)
		case loadErr != nil:
			refused++
		default:
			whole++
		}
	}
	run("undamaged", func(string) {})
	if refused != 0 {
		t.Fatal("the undamaged directory is refused")
	}

	flips := func(name string, n int) {
		good, err := os.ReadFile(filepath.Join(img, name))
		if err != nil {
			t.Fatal(err)
		}
		end := len(good)
		for end > 0 && good[end-1] == 0 {
			end-- // a WAL on a spare: zeros after its records
		}
		for k := 0; k < n; k++ {
			off := k * end / n
			run(fmt.Sprintf("%s flipped at %d of %d", name, off, end), func(dir string) {
				b := bytes.Clone(good)
				b[off] ^= 0x10
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
	wals, _ := filepath.Glob(filepath.Join(img, "*.log"))
	sort.Strings(wals)
	if len(wals) == 0 {
		t.Fatal("no WAL after kill -9")
	}
	for _, w := range wals {
		flips(filepath.Base(w), 60)
	}
	tables, _ := filepath.Glob(filepath.Join(img, "*.sst"))
	manifests, _ := filepath.Glob(filepath.Join(img, "MANIFEST-*"))
	for _, f := range append(tables, manifests...) {
		flips(filepath.Base(f), 12)
	}

	// Cuts of the newest WAL: at record boundaries and inside records.
	newest := filepath.Base(wals[len(wals)-1])
	good, _ := os.ReadFile(filepath.Join(img, newest))
	end := len(good)
	for end > 0 && good[end-1] == 0 {
		end--
	}
	for k := 1; k <= 24; k++ {
		at := k * end / 25
		run(fmt.Sprintf("%s cut at %d of %d", newest, at, end), func(dir string) {
			if err := os.Truncate(filepath.Join(dir, newest), int64(at)); err != nil {
				t.Fatal(err)
			}
		})
	}

	// A flipped byte in the newest snapshot (rewritten through Pebble, so
	// only the snapshot's own checksum can tell): an older snapshot, or
	// the whole journal, gives everything.
	run("snapshot flipped", func(dir string) {
		db, err := pebble.Open(dir, &pebble.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		it, _ := db.NewIter(&pebble.IterOptions{LowerBound: []byte{'s'}, UpperBound: []byte{'t'}})
		if !it.Last() {
			it.Close()
			return // no snapshot: nothing to damage
		}
		k, v := bytes.Clone(it.Key()), bytes.Clone(it.Value())
		it.Close()
		v[len(v)/2] ^= 0x10
		if err := db.Set(k, v, pebble.Sync); err != nil {
			t.Fatal(err)
		}
		t.Logf("snapshot %d flipped", binary.BigEndian.Uint64(k[1:]))
	})
	t.Logf("%d damaged copies: %d refused, %d loaded with every one of %d acknowledged orders", refused+whole, refused, whole, len(acked))
	if refused == 0 {
		t.Fatal("no damage was refused")
	}
}

// loadDir loads dir read-write as the server's start does, with the
// test's config.
func loadDir(dir string) (*journal.State, error) {
	cfg, err := config.LoadConfig("testdata/e2e.json")
	if err != nil {
		return nil, err
	}
	coins, specs, err := cfg.EngineSpecs()
	if err != nil {
		return nil, err
	}
	s, err := journal.Open(journal.Options{Dir: dir, Reserve: -1})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Load(journal.LoadOptions{Coins: coins, Markets: specs, FeeUID: cfg.FeeUID, InsuranceUID: cfg.InsuranceUID})
}
