// Package affinity keeps a process on a set of CPUs (Linux).
//
// The exchange server (exchanged -cpus) and the bench harness's bare
// target use it to run on part of the machine: on a small machine shared
// with a load generator, a server that stays on one CPU does not migrate,
// wakes its own threads without an interprocessor interrupt (a VM exit on
// a virtual machine) and runs Go with one processor, with no idle
// processor for the scheduler to spin up (bench/LOG.md has the
// measurements).
package affinity

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Parse reads a CPU list as Linux writes one (cpuset(7)): comma-separated
// CPU numbers and ranges, such as "0", "0-3" or "0,2-3".
func Parse(list string) (unix.CPUSet, error) {
	var set unix.CPUSet
	if strings.TrimSpace(list) == "" {
		return set, errors.New("empty CPU list")
	}
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		first, err := cpuNumber(lo)
		if err != nil {
			return set, fmt.Errorf("CPU list %q: %w", list, err)
		}
		last := first
		if isRange {
			if last, err = cpuNumber(hi); err != nil {
				return set, fmt.Errorf("CPU list %q: %w", list, err)
			}
			if last < first {
				return set, fmt.Errorf("CPU list %q: range %d-%d runs backwards", list, first, last)
			}
		}
		for c := first; c <= last; c++ {
			set.Set(c)
		}
	}
	return set, nil
}

// maxCPU bounds a CPU number: the size of unix.CPUSet.
const maxCPU = len(unix.CPUSet{}) * 64

func cpuNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || s != strconv.Itoa(n) {
		return 0, fmt.Errorf("%q is not a CPU number", s)
	}
	if n >= maxCPU {
		return 0, fmt.Errorf("CPU %d is beyond the largest this build handles (%d)", n, maxCPU-1)
	}
	return n, nil
}

// Format writes set as a CPU list ("0-1,3").
func Format(set unix.CPUSet) string {
	var b strings.Builder
	for c := 0; c < maxCPU; c++ {
		if !set.IsSet(c) || c > 0 && set.IsSet(c-1) {
			continue
		}
		end := c
		for end+1 < maxCPU && set.IsSet(end+1) {
			end++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c))
		if end > c {
			b.WriteString("-" + strconv.Itoa(end))
		}
	}
	return b.String()
}

// Restrict moves every thread of the process onto set, and sets Go's
// processors (GOMAXPROCS) to procs unless the GOMAXPROCS environment
// variable chose their number. Threads started later inherit the set from
// the thread that starts them, and so does a program this process executes
// (whose Go runtime then sizes GOMAXPROCS by the set at start, until it
// restricts itself in turn).
func Restrict(set unix.CPUSet, procs int) error {
	if set.Count() == 0 {
		return errors.New("no CPU in the set")
	}
	// The runtime may start a thread while the threads are listed, from one
	// not yet moved; a pass that finds every thread on set ends it.
	for pass := 0; ; pass++ {
		moved, err := restrictThreads(set)
		if err != nil {
			return err
		}
		if moved == 0 {
			break
		}
		if pass == 10 {
			return errors.New("threads kept appearing outside the CPU set")
		}
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(procs)
	}
	return nil
}

// restrictThreads sets the affinity of each thread not on set yet and
// returns how many it moved.
func restrictThreads(set unix.CPUSet) (int, error) {
	off, err := Off(0, set)
	if err != nil {
		return 0, err
	}
	for _, tid := range off {
		switch err := unix.SchedSetaffinity(tid, &set); {
		case errors.Is(err, unix.ESRCH):
			continue // the thread has exited
		case errors.Is(err, unix.EINVAL):
			return 0, fmt.Errorf("CPUs %s: none of them is available here (online: %s)", Format(set), online())
		case err != nil:
			return 0, fmt.Errorf("CPUs %s: %w", Format(set), err)
		}
		// The kernel keeps the CPUs of the set it can use, silently.
		var cur unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &cur); err == nil && cur != set {
			return 0, fmt.Errorf("CPUs %s: only %s of them are available here (online: %s)", Format(set), Format(cur), online())
		}
	}
	return len(off), nil
}

// Off returns the threads of process pid (0: this one) whose affinity is
// not set; threads that exit meanwhile are left out.
func Off(pid int, set unix.CPUSet) ([]int, error) {
	dir := "/proc/self/task"
	if pid != 0 {
		dir = "/proc/" + strconv.Itoa(pid) + "/task"
	}
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var off []int
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		var cur unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &cur); errors.Is(err, unix.ESRCH) || err == nil && cur == set {
			continue
		}
		off = append(off, tid)
	}
	return off, nil
}

// online returns the machine's online CPUs, for messages.
func online() string {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// Half returns the first half (at least one) of the CPUs this process may
// run on.
func Half() (unix.CPUSet, error) {
	var all, half unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return half, err
	}
	want := max(1, all.Count()/2)
	for c := 0; c < maxCPU && half.Count() < want; c++ {
		if all.IsSet(c) {
			half.Set(c)
		}
	}
	return half, nil
}
