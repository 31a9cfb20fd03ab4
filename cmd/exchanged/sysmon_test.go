package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// godebugOf returns the GODEBUG value in the running server's environment.
func godebugOf(t *testing.T, s *server) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	var v []string
	for _, kv := range strings.Split(string(b), "\x00") {
		if s, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			v = append(v, s)
		}
	}
	if len(v) != 1 {
		t.Fatalf("the server's environment has %d GODEBUG entries: %q", len(v), v)
	}
	return v[0]
}

// TestSysmonSetting: the server re-executes itself with schedtrace added to
// GODEBUG (sysmon.go), keeping the GODEBUG it was given, and leaves a
// GODEBUG that names schedtrace alone.
func TestSysmonSetting(t *testing.T) {
	t.Setenv("GODEBUG", "")
	s := startServer(t, "")
	if got := godebugOf(t, s); got != sysmonSetting {
		t.Errorf("GODEBUG = %q, want %q", got, sysmonSetting)
	}
	s.stop()

	t.Setenv("GODEBUG", "madvdontneed=1")
	s = startServer(t, "")
	if got, want := godebugOf(t, s), sysmonSetting+",madvdontneed=1"; got != want {
		t.Errorf("GODEBUG = %q, want %q", got, want)
	}
	s.stop()

	t.Setenv("GODEBUG", "schedtrace=0")
	s = startServer(t, "")
	if got, want := godebugOf(t, s), "schedtrace=0"; got != want {
		t.Errorf("GODEBUG = %q, want %q (an explicit schedtrace is kept)", got, want)
	}
}
