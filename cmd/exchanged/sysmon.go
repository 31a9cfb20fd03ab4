package main

import (
	"os"
	"strings"
	"syscall"
)

// sysmonSetting keeps Go's system monitor (sysmon) out of its deep sleep.
//
// sysmon sleeps 20 µs at a time while it finds work to do, doubling the
// sleep after 50 idle rounds up to 10 ms. But whenever it finds every P
// idle it sleeps until woken, and the next goroutine to enter a system
// call wakes it (runtime.entersyscall: a futex wake under sched.lock), and
// that wake puts it back at 20 µs. A server between bursts of requests has
// every P idle many times a second and answers each request with system
// calls, so sysmon never backed off: at 19,200 requests/s it was 11.9% of
// the server's CPU samples (perf record -g, with its nanosleeps and the
// context switches around them).
//
// The runtime skips the deep sleep when GODEBUG's schedtrace is set (so
// that the trace keeps its period). With the largest period, ~24.8 days,
// the trace itself is a line of scheduler state on stderr once per period,
// counted from the machine's boot. sysmon then polls on its usual schedule
// and backs off to 10 ms when there is nothing to do: at 19,200/s it fell
// to 0.24% of the samples, and the kernel's context switch code from 19.0%
// to 11.9%. bench/rest-ab.sh at 19,200 requests/s, 6 interleaved rounds,
// twice (the first with the setting given by a wrapper, the second with
// this code):
//
//	                           first A/B                    second A/B
//	server CPU ticks, mean     1,057 -> 905 (-14%), 6 of 6   1,059 -> 885 (-16%), 6 of 6
//	machine CPU ticks, mean    1,730 -> 1,643 (-5%), 5 of 6  1,726 -> 1,598 (-7%), 6 of 6
//	client p99, median         2.14 -> 1.76 ms, 5 of 6      2.05 -> 1.86 ms, 4 of 6
//
// ("k of 6": the rounds in which it was lower with the setting.) An idle
// server pays for the polling: 13 CPU ticks in 20 s against 6, ~185
// context switches a second against ~115.
//
// The runtime reads schedtrace only when the process starts, so main
// re-executes the binary with it added, unless GODEBUG already names
// schedtrace (schedtrace=0 turns this off).
const sysmonSetting = "schedtrace=2147483647"

// reexecForSysmon replaces the process (same pid) with the same binary and
// arguments, sysmonSetting added to GODEBUG. It returns only if it did not
// (the setting is there already, or the exec failed: the server then runs
// as it is).
func reexecForSysmon() {
	cur := os.Getenv("GODEBUG") // the first GODEBUG, as the runtime reads it
	if strings.Contains(cur, "schedtrace=") {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	v := sysmonSetting
	if cur != "" {
		v += "," + cur
	}
	// One GODEBUG only: with two, Go reads the first, and the new process
	// would not see the setting (and re-execute itself again).
	env := []string{"GODEBUG=" + v}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			env = append(env, kv)
		}
	}
	_ = syscall.Exec(exe, os.Args, env)
}
