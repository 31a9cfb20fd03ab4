package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/weexcore/exchange/bench/load"
)

// fsyncSample times n appends of 4 KiB each followed by fdatasync in dir
// and returns the median and the largest.
func fsyncSample(dir string, n int) (p50, worst time.Duration, err error) {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	h := load.NewHistogram()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := f.Write(buf); err != nil {
			return 0, 0, err
		}
		if err := fdatasync(f); err != nil {
			return 0, 0, err
		}
		h.RecordValue(max(1, time.Since(t0).Microseconds()))
	}
	return time.Duration(h.ValueAtPercentile(50)) * time.Microsecond, time.Duration(h.Max()) * time.Microsecond, nil
}

// FsyncProbe times n appends of 4 KiB each followed by fdatasync in dir:
// the floor under every durable acknowledgement on this machine.
func FsyncProbe(dir string, n int) (string, error) {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	h := load.NewHistogram()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := f.Write(buf); err != nil {
			return "", err
		}
		if err := fdatasync(f); err != nil {
			return "", err
		}
		h.RecordValue(max(1, time.Since(t0).Microseconds()))
	}
	us := func(p float64) string {
		return load.FormatLatency(time.Duration(h.ValueAtPercentile(p)) * time.Microsecond)
	}
	return fmt.Sprintf("%d × (4 KiB append + fdatasync) in %s: p50 %s, p99 %s, max %s ms",
		n, filepath.Dir(f.Name()), us(50), us(99), load.FormatLatency(time.Duration(h.Max())*time.Microsecond)), nil
}
