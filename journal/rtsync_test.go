//go:build cgo

package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSyncThread: the sync thread syncs a file, reports the error of one
// it cannot sync (a pipe: EINVAL) and goes on, and stops. It runs under
// SCHED_FIFO when it was started with a priority; where that is not
// permitted, starting it fails with EPERM and the thread is checked at
// ordinary priority.
func TestSyncThread(t *testing.T) {
	st, err := startSyncThread(rtSyncPrio)
	policy := 1 // SCHED_FIFO
	if errors.Is(err, syscall.EPERM) {
		t.Logf("real-time priority not permitted here; checking the thread at ordinary priority")
		st, err = startSyncThread(0)
		policy = 0
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := threadPolicy(t, st.tid); got != policy {
		t.Errorf("thread %d runs under policy %d, want %d", st.tid, got, policy)
	}
	if got := threadName(t, st.tid); got != "walsync" {
		t.Errorf("thread %d is named %q, want walsync", st.tid, got)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for i := range 3 {
		if _, err := f.WriteString("record"); err != nil {
			t.Fatal(err)
		}
		if err := st.syncData(f.Fd()); err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
		if err := st.syncData(w.Fd()); !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("syncing a pipe: %v, want EINVAL", err)
		}
	}
	st.stop() // the thread answers, then exits
	for i := 0; ; i++ {
		_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", st.tid))
		if os.IsNotExist(err) {
			break
		}
		if i == 100 {
			t.Fatalf("thread %d still there 1 s after stop (%v)", st.tid, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// threadPolicy returns the scheduling policy of one of this process's
// threads (field 41 of /proc/self/task/TID/stat).
func threadPolicy(t *testing.T, tid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // from field 3, the state
	var p int
	fmt.Sscan(fields[41-3], &p)
	return p
}

func threadName(t *testing.T, tid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/comm", tid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
