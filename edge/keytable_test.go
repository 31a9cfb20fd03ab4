package edge

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestKeyTable: every added key is found, through every growth of the
// table; an unknown key is not; adding a key again replaces its
// credentials.
func TestKeyTable(t *testing.T) {
	kt := newKeyTable()
	const n = 10_000
	for i := 0; i < n; i++ {
		kt.add(newCred(int64(i), 0, fmt.Sprintf("key-%d", i), "s", "p", 0))
	}
	for i := 0; i < n; i++ {
		if c := kt.lookup([]byte(fmt.Sprintf("key-%d", i))); c == nil || c.uid != int64(i) {
			t.Fatalf("key-%d: got %+v", i, c)
		}
	}
	for _, k := range []string{"", "key-", "key-10000", "key-1x"} {
		if c := kt.lookup([]byte(k)); c != nil {
			t.Errorf("%q: got uid %d, want none", k, c.uid)
		}
	}
	kt.add(newCred(-7, 0, "key-42", "s2", "p", 0))
	if c := kt.lookup([]byte("key-42")); c == nil || c.uid != -7 {
		t.Errorf("key-42 after a second add: got %+v, want uid -7", c)
	}
	if kt.n != n {
		t.Errorf("%d keys counted, want %d (a replacement is not a new key)", kt.n, n)
	}
}

// TestKeyTableConcurrent: lookups running while keys are added (and the
// table grows under them) find every key added before they started.
func TestKeyTableConcurrent(t *testing.T) {
	kt := newKeyTable()
	const n = 50_000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%d", i))
	}
	var added atomic.Int64
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for j := 0; ; j++ {
				a := added.Load()
				if a == n {
					return
				}
				if a == 0 {
					continue
				}
				i := (int64(j)*7919 + int64(r)) % a
				if c := kt.lookup(keys[i]); c == nil || c.uid != i {
					t.Errorf("key-%d (of %d added): got %+v", i, a, c)
					return
				}
			}
		}(r)
	}
	for i := range keys {
		kt.add(newCred(int64(i), 0, string(keys[i]), "s", "p", 0))
		added.Store(int64(i + 1))
	}
	wg.Wait()
}

// TestKeyTableLookupAllocs: authenticating a request looks its key up
// without allocating.
func TestKeyTableLookupAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	kt := newKeyTable()
	for i := 0; i < 1000; i++ {
		kt.add(newCred(int64(i), 0, fmt.Sprintf("key-%d", i), "s", "p", 0))
	}
	key, miss := []byte("key-517"), []byte("key-none")
	if n := testing.AllocsPerRun(1000, func() {
		if kt.lookup(key) == nil || kt.lookup(miss) != nil {
			t.Fatal("lookup")
		}
	}); n != 0 {
		t.Errorf("lookup: %v allocs, want 0", n)
	}
}

// BenchmarkKeyTableAdd: registering users one after another (as a restart
// replays them) costs the same per user however many there are.
func BenchmarkKeyTableAdd(b *testing.B) {
	creds := make([]*cred, b.N)
	for i := range creds {
		creds[i] = &cred{uid: int64(i), apiKey: fmt.Sprintf("key-%d", i)}
	}
	kt := newKeyTable()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		kt.add(creds[i])
	}
}
