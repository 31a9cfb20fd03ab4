package suite

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a child process under test (the server or the bare target).
type Proc struct {
	cmd   *exec.Cmd
	log   *os.File
	done  chan struct{}
	err   error
	Addrs map[string]string // from the ready line: "rest", "admin" or "bare"
}

var readyRE = regexp.MustCompile(`ready ((?:\w+=\S+\s*)+)`)

// StartProc starts name with args, writes its output to logPath, and
// waits (up to timeout) for its "ready k=ADDR ..." line.
func StartProc(name string, args []string, logPath string, timeout time.Duration) (*Proc, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("suite: start %s: %v", name, err)
	}
	p := &Proc{cmd: cmd, log: lf, done: make(chan struct{})}
	ready := make(chan map[string]string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(lf, line)
			if !sent {
				if m := readyRE.FindStringSubmatch(line); m != nil {
					addrs := map[string]string{}
					for _, kv := range strings.Fields(m[1]) {
						k, v, _ := strings.Cut(kv, "=")
						addrs[k] = v
					}
					ready <- addrs
					sent = true
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	go func() {
		p.err = cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	select {
	case a := <-ready:
		p.Addrs = a
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("suite: %s exited before ready (%v); see %s", name, p.err, logPath)
	case <-time.After(timeout):
		p.Stop(time.Second)
		return nil, fmt.Errorf("suite: %s not ready after %v; see %s", name, timeout, logPath)
	}
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Counters are a process's cumulative resource counters.
type Counters struct {
	CPU          time.Duration // user + system
	SysCPU       time.Duration // its system part: time in the kernel (syscalls, the network stack they run, page faults)
	CtxSwitches  int64         // voluntary + involuntary, summed over its threads
	ReadSyscalls int64         // read-like syscalls (/proc/PID/io syscr)
	WriteSyscall int64         // write-like syscalls (syscw): socket writes, journal writes
	// RunDelay is the time its threads were runnable but waiting for a
	// CPU (schedstat), summed over threads: CPU oversubscription.
	RunDelay time.Duration
}

// since returns the counts accrued from p (an earlier read) to c.
func (c Counters) since(p Counters) Counters {
	return Counters{CPU: c.CPU - p.CPU, SysCPU: c.SysCPU - p.SysCPU, CtxSwitches: c.CtxSwitches - p.CtxSwitches,
		ReadSyscalls: c.ReadSyscalls - p.ReadSyscalls, WriteSyscall: c.WriteSyscall - p.WriteSyscall, RunDelay: c.RunDelay - p.RunDelay}
}

// kernelShare returns SysCPU over CPU, or -1 without CPU time.
func (c Counters) kernelShare() float64 {
	if c.CPU <= 0 {
		return -1
	}
	return float64(c.SysCPU) / float64(c.CPU)
}

// Counters reads the process's counters from /proc.
func (p *Proc) Counters() Counters { return procCounters(p.Pid()) }

func procCounters(pid int) Counters {
	var c Counters
	c.CPU, c.SysCPU = procCPU(pid)
	base := "/proc/" + strconv.Itoa(pid)
	if tasks, err := os.ReadDir(base + "/task"); err == nil {
		for _, t := range tasks {
			if b, err := os.ReadFile(base + "/task/" + t.Name() + "/schedstat"); err == nil {
				if f := strings.Fields(string(b)); len(f) >= 2 {
					ns, _ := strconv.ParseInt(f[1], 10, 64)
					c.RunDelay += time.Duration(ns)
				}
			}
			b, err := os.ReadFile(base + "/task/" + t.Name() + "/status")
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(l, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
					n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					c.CtxSwitches += n
				}
			}
		}
	}
	if b, err := os.ReadFile(base + "/io"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(l, ":")
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch k {
			case "syscr":
				c.ReadSyscalls = n
			case "syscw":
				c.WriteSyscall = n
			}
		}
	}
	return c
}

// Stop sends SIGTERM and waits up to grace for the exit, then kills the
// process group. It returns the exit error of a non-clean exit.
func (p *Proc) Stop(grace time.Duration) error {
	defer p.log.Close()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("suite: pid %d did not stop within %v; killed", p.Pid(), grace)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return fmt.Errorf("suite: pid %d: %v", p.Pid(), p.err)
	}
	return nil
}

// clkTck is USER_HZ, which is 100 on every Linux this runs on.
const clkTck = 100

// procCPU reads utime+stime of pid from /proc/PID/stat, and stime.
func procCPU(pid int) (total, sys time.Duration) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(s[i+1:])
	// After the command name: state is field 3; utime and stime are 14, 15.
	if len(f) < 13 {
		return 0, 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clkTck, time.Duration(st) * time.Second / clkTck
}

// selfCPU returns this process's user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RunLogged runs a command in dir with a timeout, copying its output line
// by line to progress (with prefix) and to the returned string.
func RunLogged(ctx context.Context, dir string, env []string, progress io.Writer, prefix string, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var out strings.Builder
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			out.WriteString(sc.Text())
			out.WriteByte('\n')
			fmt.Fprintln(progress, prefix+sc.Text())
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	wg.Wait()
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("timed out after %v", timeout)
	}
	return out.String(), err
}

// machineBusy returns the CPU time all processes of the machine used so
// far (user, nice, system, steal from /proc/stat) and, apart, the time in
// interrupts and softirqs (where the kernel does much of the loopback
// networking, charged to no process).
func machineBusy() (busy, irq time.Duration) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0
	}
	sum := func(idx ...int) time.Duration {
		var ticks int64
		for _, i := range idx {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += v
		}
		return time.Duration(ticks) * time.Second / clkTck
	}
	return sum(1, 2, 3, 8), sum(6, 7)
}
