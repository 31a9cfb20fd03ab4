package core

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/weexcore/exchange/engine"
	"github.com/weexcore/exchange/journal"
)

// tmpfs mounts a tmpfs of size bytes for the test, or skips it.
func tmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	os.MkdirAll(dir, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs for a full disk here (%v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes a file in dir until the file system is full.
func fill(t *testing.T, dir string) string {
	name := filepath.Join(dir, "filler")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	return name
}

// TestDiskFull: when the disk fills, the command whose commit fails is
// answered ErrUnavailable, and so is every later command and read of
// memory, while history reads go on; once space returns SpaceBack says
// so, Close neither hangs nor panics, and a restart has every command
// acknowledged before, and nothing refused.
func TestDiskFull(t *testing.T) {
	mnt := tmpfs(t, "24m")
	dir := filepath.Join(mnt, "data")
	o := testOptions(t, dir)
	o.Reserve = 2 << 20
	n, err := openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	addUser(t, n, feeUID)
	u := addUser(t, n, 100)
	filler := fill(t, mnt)
	var acked engine.Amount
	var failedAt int
	for i := 0; i < 1_000_000; i++ {
		r := AcquireRequest()
		r.Cmd = engine.Cmd{Kind: engine.CmdDeposit, User: u, UID: 100, Coin: 2, Amount: 1 + engine.Amount(i%7)}
		err := n.Submit(r)
		if err == nil {
			err = r.Wait(deadline())
		}
		if err == nil {
			acked += r.Cmd.Amount
			ReleaseRequest(r)
			continue
		}
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("deposit %d on a full disk: %v, want ErrUnavailable", i, err)
		}
		failedAt = i
		break
	}
	if failedAt == 0 {
		t.Fatal("a million deposits fit on the full disk")
	}
	select {
	case <-n.Failed():
	default:
		t.Fatal("Failed not closed after a failed commit")
	}
	if err := n.Submit(AcquireRequest()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a command after the failure: %v, want ErrUnavailable", err)
	}
	if _, err := n.Balances(u, deadline(), nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("balances after the failure: %v, want ErrUnavailable", err)
	}
	if _, _, err := n.State(deadline()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("state after the failure: %v, want ErrUnavailable", err)
	}
	if b, err := n.Store().Bills(100, journal.CoinAll, 0, 0, maxTime, 0, 10, nil); err != nil || len(b) == 0 {
		t.Fatalf("history after the failure: %d bills, %v; want them served", len(b), err)
	}
	select {
	case <-n.SpaceBack():
		t.Fatal("SpaceBack closed while the disk is full")
	case <-time.After(1500 * time.Millisecond):
	}
	os.Remove(filler)
	select {
	case <-n.SpaceBack():
	case <-time.After(10 * time.Second):
		t.Fatal("SpaceBack not closed 10 s after the disk was freed")
	}
	done := make(chan error, 1)
	go func() { done <- n.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Logf("close after the failure: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close after a failed write hangs")
	}

	// A restart on a full disk fails at once, saying why.
	filler = fill(t, mnt)
	opened := make(chan error, 1)
	go func() {
		n, err := openNode(o)
		if err == nil {
			n.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err == nil || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("open on a full disk: %v, want an error saying no space (ENOSPC)", err)
		}
		t.Logf("open on a full disk: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("open on a full disk hangs")
	}
	os.Remove(filler)
	n, err = openNode(o)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	bals, err := n.Balances(u, deadline(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := bals[2].Avail; got != acked {
		t.Fatalf("after the restart: balance %d, want the %d acknowledged (%d deposits acknowledged)", got, acked, failedAt)
	}
	t.Logf("%d deposits acknowledged before the disk was full; the restart has them all", failedAt)
}
