package bench

import (
	"os"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// Proc names one process (PID) of a group; the whole machine is the group
// "machine" with pid 0.
type Proc struct {
	Group string
	PID   int
}

// CPUTimes is CPU seconds (user + system) used so far, per process.
type CPUTimes map[Proc]float64

// ReadCPU reads the CPU time of each stack process, of this harness, of
// PostgreSQL's processes, of every Node process (the SQS emulator), and of
// the whole machine (every core's busy time). PostgreSQL's are the
// postmaster's and its children's when postmaster is not 0, else every
// process named postgres. The emulator may serve other work too; so may the
// machine.
func ReadCPU(s *stack.Stack, postmaster int) CPUTimes {
	t := CPUTimes{}
	if fs, err := procfs.NewDefaultFS(); err == nil {
		if st, err := fs.Stat(); err == nil {
			c := st.CPUTotal
			t[Proc{"machine", 0}] = c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
		}
	}
	for _, name := range s.Names("") {
		if pid := s.PID(name); pid != 0 {
			t[Proc{name, pid}] = procCPU(pid)
		}
	}
	t[Proc{"bench", os.Getpid()}] = procCPU(os.Getpid())
	procs, err := procfs.AllProcs()
	if err != nil {
		return t
	}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // the process is gone
		}
		switch {
		case pgProcess(st, postmaster):
			t[Proc{"postgres", p.PID}] = st.CPUTime()
		case st.Comm == "node":
			t[Proc{"sqs", p.PID}] = st.CPUTime()
		}
	}
	return t
}

// pgProcess says whether a process is PostgreSQL's: the postmaster or one of
// its children, or with no postmaster given, any process named postgres.
func pgProcess(st procfs.ProcStat, postmaster int) bool {
	if postmaster == 0 {
		return strings.HasPrefix(st.Comm, "postgres")
	}
	return st.PID == postmaster || st.PPID == postmaster
}

// procCPU is one process's CPU seconds; 0 when it is gone.
func procCPU(pid int) float64 {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return st.CPUTime()
}

// cpuSeconds is the CPU used between two readings, in seconds, per group:
// each process counts what it used since the first reading (all of it when
// it started since), and one that exited meanwhile counts nothing, so a
// stage that stops a service does not subtract that service's PostgreSQL
// connections. "other" is the machine's busy time that no group accounts
// for (other work on a shared machine), when positive.
func cpuSeconds(before, after CPUTimes) map[string]float64 {
	used := map[string]float64{}
	for p, t := range after {
		used[p.Group] += t - before[p]
	}
	groups := 0.0
	for name, s := range used {
		if name != "machine" {
			groups += s
		}
	}
	if other := used["machine"] - groups; other > 0 {
		used["other"] = other
	}
	return used
}

// Cores is the CPU used between two readings over seconds of wall time:
// cores used per group (see cpuSeconds). Groups under 0.01 core are left
// out.
func Cores(before, after CPUTimes, seconds float64) map[string]float64 {
	out := map[string]float64{}
	for name, s := range cpuSeconds(before, after) {
		if c := s / seconds; c >= 0.01 {
			out[name] = c
		}
	}
	return out
}
