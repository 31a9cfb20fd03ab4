package main

import (
	"os"
	"os/exec"
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
// GODEBUG (sysmon.go), keeping the GODEBUG it was given, and says so in its
// log; it leaves a GODEBUG that names schedtrace alone, and does nothing
// under -sysmon-poll=false.
func TestSysmonSetting(t *testing.T) {
	for _, c := range []struct {
		godebug string
		args    []string
		want    string // GODEBUG of the running server
		log     string
	}{
		{"", nil, sysmonSetting, `msg="sysmon poll: re-executed with GODEBUG=` + sysmonSetting + ` (off: -sysmon-poll=false)" godebug="` + sysmonSetting + `"` + "\n"},
		{"madvdontneed=1", nil, sysmonSetting + ",madvdontneed=1", `msg="sysmon poll: re-executed with GODEBUG=`},
		{"schedtrace=0", nil, "schedtrace=0", `msg="sysmon poll: GODEBUG names schedtrace already; not re-executed" godebug="schedtrace=0"`},
		{"", []string{"-sysmon-poll=false"}, "", `msg="sysmon poll: off (-sysmon-poll=false)" godebug=""`},
	} {
		t.Setenv("GODEBUG", c.godebug)
		s := startServer(t, "", c.args...)
		if got := godebugOf(t, s); got != c.want {
			t.Errorf("GODEBUG %q %v: the server has GODEBUG %q, want %q", c.godebug, c.args, got, c.want)
		}
		s.stop()
		if n := strings.Count(s.log.String(), "msg=starting "); n != 1 || !strings.Contains(s.log.String(), c.log) {
			t.Errorf("GODEBUG %q %v: %d start lines, want 1 and %q in:\n%s", c.godebug, c.args, n, c.log, s.log)
		}
	}
}

// TestIOTuningFlag: -io-tuning is parsed, logged at start and given to the
// journal (the server serves with any set); a bad value stops the start
// with a message naming the flag.
func TestIOTuningFlag(t *testing.T) {
	for _, v := range []string{"none", "aio,pace-tables"} {
		s := startServer(t, "", "-io-tuning", v)
		s.ok(req{method: "POST", path: "/api/v3/order", u: &userA, body: placeBody("BTCUSDT", "BUY", "LIMIT", "0.01", "30000", "")}, nil)
		s.stop()
		if want := "ioTuning=" + v + "\n"; !strings.Contains(s.log.String(), want) {
			t.Errorf("-io-tuning %s: no %q in the log:\n%s", v, want, s.log)
		}
	}
	out, err := exec.Command(binPath, "-io-tuning", "fast", "-data", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "flag=-io-tuning") {
		t.Errorf("-io-tuning fast: %v, output %q; want a failed start naming -io-tuning", err, out)
	}
}
