package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cpuUse is the CPU time the processes a request goes through have used:
// this Go process (the servers under test and the load generator),
// PostgreSQL's and Redis's. A ratio of throughputs on a machine whose cores
// are all busy is set by the sum of the three, so the benchmarks print each
// one's share per request (docs/benchmarks.md uses them to say where a
// request's cost lies).
type cpuUse struct {
	Go, Postgres, Redis time.Duration
}

// userHZ is the unit of /proc/<pid>/stat's times: fixed at 100 on Linux
// whatever the kernel's internal tick.
const userHZ = 100

// readCPU sums utime+stime of this process and of every postgres and
// redis-server process on the machine. Anywhere /proc cannot be read it
// returns zeros, and the benchmarks print nothing for it.
func readCPU() cpuUse {
	var u cpuUse
	u.Go = procCPU("self")
	pids, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range pids {
		pid := filepath.Base(dir)
		comm, err := os.ReadFile(dir + "/comm")
		if err != nil {
			continue
		}
		switch name := strings.TrimSpace(string(comm)); {
		case strings.HasPrefix(name, "postgres"):
			u.Postgres += procCPU(pid)
		case strings.HasPrefix(name, "redis-server"):
			u.Redis += procCPU(pid)
		}
	}
	return u
}

// procCPU is a process's user+system CPU time from /proc/<pid>/stat.
func procCPU(pid string) time.Duration {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// The command name, field 2, may hold spaces: count from after its ")".
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / userHZ
}

func (u cpuUse) sub(v cpuUse) cpuUse {
	return cpuUse{Go: u.Go - v.Go, Postgres: u.Postgres - v.Postgres, Redis: u.Redis - v.Redis}
}

// perRequest renders the CPU used over n requests as milliseconds each.
func (u cpuUse) perRequest(n int) string {
	if n == 0 || u == (cpuUse{}) {
		return ""
	}
	each := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	return fmt.Sprintf("  CPU/request: Go %.3f ms, PostgreSQL %.3f ms, Redis %.3f ms", each(u.Go), each(u.Postgres), each(u.Redis))
}
