package main

import (
	"os"
	"strings"
	"syscall"
)

// sysmonSetting keeps Go's system monitor (sysmon) polling instead of
// sleeping deeply (-sysmon-poll, on by default).
//
// Whenever sysmon finds every P idle it sleeps until woken, and the next
// goroutine to enter a system call wakes it (a futex wake under
// sched.lock) and resets its back-off to 20 µs. A server between bursts of
// requests idles many times a second and answers each request with system
// calls, so sysmon never backs off and its sleeps and wake-ups take a
// large share of the CPU. With schedtrace set, the runtime skips the deep
// sleep (to keep the trace's period) and sysmon backs off to 10 ms when
// there is nothing to do; an idle server pays a little polling for it.
// With the largest period (~24.8 days) the trace itself is one line of
// scheduler state on stderr per period.
//
// The runtime reads GODEBUG only when the process starts, so the server
// re-executes itself with the setting added; a GODEBUG that names
// schedtrace already is left as it is (schedtrace=0 turns this off too).
const sysmonSetting = "schedtrace=2147483647"

// reexecForSysmon replaces the process (same pid) with the same binary and
// arguments, sysmonSetting added to GODEBUG. It returns only if it did not:
// nil when GODEBUG names schedtrace already, else why the exec failed (the
// server then runs as it is).
func reexecForSysmon() error {
	cur := os.Getenv("GODEBUG") // the first GODEBUG, as the runtime reads it
	if strings.Contains(cur, "schedtrace=") {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return err
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
	return syscall.Exec(exe, os.Args, env)
}

// reexec replaces the process with a fresh run of the same executable,
// flags and environment (the same pid): files and listeners close on
// exec, so the new run opens them as a restarted process would.
func reexec() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, os.Environ())
}

// sysmonState describes for the start-up log what the process runs with:
// whether it was re-executed with sysmonSetting (GODEBUG begins with it)
// and the GODEBUG it has.
func sysmonState() (reexecuted bool, godebug string) {
	godebug = os.Getenv("GODEBUG")
	return godebug == sysmonSetting || strings.HasPrefix(godebug, sysmonSetting+","), godebug
}
