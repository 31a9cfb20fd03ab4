package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestCPUsFlag: -cpus keeps every thread of the server on the list (the
// re-executed process included: sysmon.go), the server serves, and a bad
// list stops it at start with a message naming the flag.
func TestCPUsFlag(t *testing.T) {
	s := startServer(t, "", "-cpus", "0")
	pid := strconv.Itoa(s.cmd.Process.Pid)
	tasks, err := os.ReadDir("/proc/" + pid + "/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/" + pid + "/task/" + task.Name() + "/status")
		if err != nil {
			continue // exited
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) != "0" {
				t.Errorf("thread %s: Cpus_allowed_list %s, want 0", task.Name(), strings.TrimSpace(v))
			}
		}
	}
	if got := godebugOf(t, s); got != sysmonSetting {
		t.Errorf("GODEBUG = %q, want %q: the re-execution kept the set", got, sysmonSetting)
	}
	s.ok(req{method: "GET", path: "/api/v3/time"}, nil)
	s.stop()

	for _, bad := range []string{"x", "1-0", "1023"} {
		out, err := exec.Command(binPath, "-cpus", bad, "-data", t.TempDir()).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "-cpus: ") {
			t.Errorf("-cpus %s: %v, output %q; want a failed start naming -cpus", bad, err, out)
		}
	}
}
