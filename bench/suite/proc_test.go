package suite

import (
	"os"
	"testing"
	"time"
)

var sink int

func TestProcCounters(t *testing.T) {
	// /proc counts CPU in clock ticks (10 ms): burn CPU until one shows,
	// for at most 2 s.
	var c Counters
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		x := 0
		for i := 0; i < 1_000_000; i++ {
			x += i
		}
		sink += x
		if c = procCounters(os.Getpid()); c.CPU > 0 {
			break
		}
	}
	if c.CPU <= 0 || c.SysCPU < 0 || c.SysCPU > c.CPU || c.CtxSwitches <= 0 || c.ReadSyscalls <= 0 {
		t.Errorf("procCounters(self) = %+v, want positive CPU (its system part within it), context switches and read syscalls", c)
	}
	if busy, _ := machineBusy(); busy <= 0 {
		t.Errorf("machineBusy = %v, want > 0", busy)
	}
	if selfCPU() <= 0 {
		t.Errorf("selfCPU = 0")
	}
}
