package main

import (
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/weexcore/exchange/internal/affinity"
)

// TestCPUsFlag: -cpus keeps every thread of the server on the list (the
// re-executed process included: sysmon.go) with one Go processor more than
// CPUs, the server serves, and a bad list stops it at start with a message
// naming the flag.
func TestCPUsFlag(t *testing.T) {
	s := startServer(t, "", "-cpus", "0")
	var cpu0 unix.CPUSet
	cpu0.Set(0)
	off, err := affinity.Off(s.cmd.Process.Pid, cpu0)
	if err != nil {
		t.Fatal(err)
	}
	if len(off) > 0 {
		t.Errorf("threads %v of the server are not on CPU 0", off)
	}
	if got := godebugOf(t, s); got != sysmonSetting {
		t.Errorf("GODEBUG = %q, want %q: the re-execution kept the set", got, sysmonSetting)
	}
	s.ok(req{method: "GET", path: "/api/v3/time"}, nil)
	s.stop()
	if !strings.Contains(s.log.String(), "msg=cpus cpus=0 procs=2\n") { // read once the server has exited
		t.Errorf("log %q: want one Go processor more than CPUs (msg=cpus cpus=0 procs=2)", s.log.String())
	}

	for _, bad := range []string{"x", "1-0", "1023"} {
		out, err := exec.Command(binPath, "-cpus", bad, "-data", t.TempDir()).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "flag=-cpus") {
			t.Errorf("-cpus %s: %v, output %q; want a failed start naming -cpus", bad, err, out)
		}
	}
}
