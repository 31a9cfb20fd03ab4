package suite

import (
	"os"
	"testing"
)

func TestProcCounters(t *testing.T) {
	x := 0
	for i := 0; i < 20_000_000; i++ { // burn a little CPU to count
		x += i
	}
	_ = x
	c := procCounters(os.Getpid())
	if c.CPU <= 0 || c.CtxSwitches <= 0 || c.ReadSyscalls <= 0 {
		t.Errorf("procCounters(self) = %+v, want positive CPU, context switches and read syscalls", c)
	}
	if busy, _ := machineBusy(); busy <= 0 {
		t.Errorf("machineBusy = %v, want > 0", busy)
	}
	if selfCPU() <= 0 {
		t.Errorf("selfCPU = 0")
	}
}
