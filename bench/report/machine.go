package report

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Machine describes where a run happened, so runs can be compared.
type Machine struct {
	CPUModel  string
	Cores     int // logical CPUs
	MemTotal  string
	Kernel    string
	GoVersion string // `go version` of the toolchain that built the server
	GOAMD64   string // the x86-64 level it compiles for (`go env GOAMD64`; tools/goamd64.sh)
	LoadAvg   string // /proc/loadavg at the start
	Hostname  string
}

// ReadMachine gathers the machine description (best effort: unknown fields
// stay empty).
func ReadMachine(goBin string) Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				m.MemTotal = strconv.FormatFloat(float64(kb)/1024/1024, 'f', 1, 64) + " GiB"
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.TrimSpace(string(b))
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		m.Kernel = utsString(u.Sysname[:]) + " " + utsString(u.Release[:]) + " " + utsString(u.Machine[:])
	}
	m.Hostname, _ = os.Hostname()
	if goBin != "" {
		if out, err := exec.Command(goBin, "version").Output(); err == nil {
			m.GoVersion = strings.TrimSpace(string(out))
		}
		if out, err := exec.Command(goBin, "env", "GOAMD64").Output(); err == nil {
			m.GOAMD64 = strings.TrimSpace(string(out))
		}
	}
	return m
}

func utsString(a []int8) string {
	b := make([]byte, 0, len(a))
	for _, c := range a {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// Git describes the source tree: the commit and whether the tree differs
// from it.
func Git(dir string) (commit string, dirty []string) {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown", nil
	}
	commit = strings.TrimSpace(string(out))
	st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output()
	if err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(st)), "\n") {
			if l != "" {
				dirty = append(dirty, strings.TrimSpace(l))
			}
		}
	}
	return commit, dirty
}

// FSType names the file system type of path (ext4, tmpfs, ...), for fsync cost.
func FSType(path string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return "unknown"
	}
	switch st.Type {
	case 0xEF53:
		return "ext2/3/4"
	case 0x01021994:
		return "tmpfs"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x794c7630:
		return "overlayfs"
	}
	return "0x" + strconv.FormatInt(int64(st.Type), 16)
}
