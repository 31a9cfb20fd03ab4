package affinity

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseFormat(t *testing.T) {
	for _, c := range []struct {
		in, out string // out "": an error
	}{
		{"0", "0"},
		{"0-3", "0-3"},
		{"0,2-3", "0,2-3"},
		{"3,0,1", "0-1,3"},
		{" 1 , 2", "1-2"},
		{"5-5", "5"},
		{"1023", "1023"},
		{"", ""},
		{" ", ""},
		{"a", ""},
		{"-1", ""},
		{"1-", ""},
		{"3-1", ""},
		{"01", ""},
		{"+1", ""},
		{"1024", ""},
		{"0,,1", ""},
	} {
		set, err := Parse(c.in)
		if c.out == "" {
			if err == nil {
				t.Errorf("Parse(%q) = %s, want an error", c.in, Format(set))
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got := Format(set); got != c.out {
			t.Errorf("Format(Parse(%q)) = %q, want %q", c.in, got, c.out)
		}
	}
}

// TestRestrict runs the test binary again (the set would otherwise stay on
// this process) to restrict itself to its first CPU with threads running,
// then checks every thread's affinity and GOMAXPROCS.
func TestRestrict(t *testing.T) {
	if os.Getenv("AFFINITY_TEST_CHILD") == "1" {
		restrictChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRestrict$", "-test.v")
	cmd.Env = append(os.Environ(), "AFFINITY_TEST_CHILD=1", "GOMAXPROCS=")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "threads on CPU") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(string(out)))
}

func restrictChild(t *testing.T) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	first := -1
	for c := 0; first < 0 && c < maxCPU; c++ {
		if all.IsSet(c) {
			first = c
		}
	}
	// Threads busy in system calls and in Go code while the set changes.
	stop := make(chan struct{})
	defer close(stop)
	for range 4 {
		go func() {
			runtime.LockOSThread()
			for {
				select {
				case <-stop:
					return
				default:
					unix.Getpid()
				}
			}
		}()
	}
	var set unix.CPUSet
	set.Set(first)
	if err := Restrict(set, 2); err != nil {
		t.Fatal(err)
	}
	if n := runtime.GOMAXPROCS(0); n != 2 {
		t.Errorf("GOMAXPROCS %d after Restrict to one CPU with 2 processors", n)
	}
	go func() { runtime.LockOSThread(); <-stop }() // a thread started after
	runtime.Gosched()
	off, err := Off(0, set)
	if err != nil {
		t.Fatal(err)
	}
	if len(off) > 0 {
		t.Errorf("threads %v are not on CPU %d", off, first)
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	t.Logf("%d threads on CPU %d", len(tasks), first)
}

func TestRestrictUnavailable(t *testing.T) {
	var set unix.CPUSet
	set.Set(maxCPU - 1) // no machine here has CPU 1023
	err := Restrict(set, 1)
	if err == nil || !strings.Contains(err.Error(), "none of them is available") {
		t.Fatalf("Restrict to CPU %d: %v, want an error", maxCPU-1, err)
	}
	if err := Restrict(unix.CPUSet{}, 1); err == nil {
		t.Fatal("Restrict to no CPU: no error")
	}
}
