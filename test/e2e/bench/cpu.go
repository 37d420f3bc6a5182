package bench

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/procfs"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// Proc names one process (PID) of a group; the whole machine is the group
// "machine" with pid 0. A Reaped entry is the CPU of a group's children
// that exited and were waited for (the postmaster's cutime and cstime), so
// a backend or autovacuum worker that exits between two readings still
// counts.
type Proc struct {
	Group  string
	PID    int
	Reaped bool
}

// CPUTimes is CPU seconds (user + system) used so far, per process.
type CPUTimes map[Proc]float64

// ReadCPU reads the CPU time of each stack process, of this harness, of
// PostgreSQL's processes, of every Node process (the SQS emulator), of the
// kernel's page reclaim threads ("reclaim", see reclaimThread) and of the
// whole machine (every core's busy time). PostgreSQL's are the
// postmaster's, its children's and its reaped children's when postmaster is
// not 0, else every process named postgres (then one that exits between
// readings is missed). The emulator may serve other work too; so may the
// machine.
func ReadCPU(s *stack.Stack, postmaster int) CPUTimes {
	t := CPUTimes{}
	if busy, ok := MachineBusy(); ok {
		t[Proc{Group: "machine"}] = busy
	}
	for _, name := range s.Names("") {
		if pid := s.PID(name); pid != 0 {
			t[Proc{Group: name, PID: pid}] = procCPU(pid)
		}
	}
	t[Proc{Group: "bench", PID: os.Getpid()}] = procCPU(os.Getpid())
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
			t[Proc{Group: "postgres", PID: p.PID}] = st.CPUTime()
			if p.PID == postmaster {
				t[Proc{Group: "postgres", PID: p.PID, Reaped: true}] = reapedCPU(st)
			}
		case st.Comm == "node":
			t[Proc{Group: "sqs", PID: p.PID}] = st.CPUTime()
		case reclaimThread(st.Comm):
			t[Proc{Group: "reclaim", PID: p.PID}] = st.CPUTime()
		}
	}
	return t
}

// reclaimThread says whether a process is one of the kernel's page reclaim
// threads: kswapd, or kdamond, which some virtual machines run to page out
// memory left unread for a while. Their work follows the machine's memory
// policy and how much memory the run touches, not a request.
func reclaimThread(comm string) bool {
	return strings.HasPrefix(comm, "kswapd") || strings.HasPrefix(comm, "kdamond")
}

// MachineBusy is the CPU seconds the machine's cores have been busy so far
// (user, nice, system, interrupts and steal), all of them together; false
// when /proc cannot be read.
func MachineBusy() (float64, bool) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, false
	}
	st, err := fs.Stat()
	if err != nil {
		return 0, false
	}
	c := st.CPUTotal
	return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal, true
}

// pgProcess says whether a process is PostgreSQL's: the postmaster or one of
// its children, or with no postmaster given, any process named postgres.
func pgProcess(st procfs.ProcStat, postmaster int) bool {
	if postmaster == 0 {
		return strings.HasPrefix(st.Comm, "postgres")
	}
	return st.PID == postmaster || st.PPID == postmaster
}

// reapedCPU is the CPU seconds of a process's children that exited and
// were waited for.
func reapedCPU(st procfs.ProcStat) float64 {
	return float64(st.CUTime+st.CSTime) / userHZ
}

// userHZ is the clock tick of /proc's times, as procfs assumes for CPUTime.
const userHZ = 100

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
// it started since). One that exited meanwhile counts nothing, so a stage
// that stops a service does not subtract that service's PostgreSQL
// connections, unless its group has a Reaped entry: then the rise of the
// reaped time holds the exited process's whole CPU, and the part it had
// used by the first reading comes off. "other" is the machine's busy time
// that no group accounts for (other work on a shared machine), when
// positive.
func cpuSeconds(before, after CPUTimes) map[string]float64 {
	used := map[string]float64{}
	reaps := map[string]bool{}
	for p, t := range after {
		used[p.Group] += t - before[p]
		reaps[p.Group] = reaps[p.Group] || p.Reaped
	}
	for p, t := range before {
		if _, live := after[p]; !live && reaps[p.Group] {
			used[p.Group] -= t
		}
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
	return coresOf(cpuSeconds(before, after), seconds)
}

// coresOf divides each group's CPU seconds by wall seconds, leaving out
// groups under 0.01 core.
func coresOf(cpu map[string]float64, wall float64) map[string]float64 {
	out := map[string]float64{}
	for name, s := range cpu {
		if c := s / wall; c >= 0.01 {
			out[name] = c
		}
	}
	return out
}

// pgRoles names each client backend's role: PostgreSQL's own view of its
// sessions, so no process title has to be parsed.
const pgRoles = `SELECT pid, usename FROM pg_stat_activity WHERE backend_type = 'client backend' AND usename IS NOT NULL`

// ReadPGRoles returns the role of each of the server's client backends, by
// process id, as db sees them.
func ReadPGRoles(ctx context.Context, db *pgxpool.Pool) (map[int]string, error) {
	rows, err := db.Query(ctx, pgRoles)
	if err != nil {
		return nil, fmt.Errorf("read the backends' roles: %w", err)
	}
	out := map[int]string{}
	var pid int
	var role string
	_, err = pgx.ForEachRow(rows, []any{&pid, &role}, func() error {
		out[pid] = role
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the backends' roles: %w", err)
	}
	return out, nil
}

// PGByRole is PostgreSQL's CPU between two readings, in seconds, by the
// role of the client backend that used it (roles, by process id): the
// services' pools stay connected, so their backends live through a stage.
// What no role accounts for (background processes, and backends that
// exited, whose time is the postmaster's reaped time) is the rest of the
// "postgres" group of cpuSeconds.
func PGByRole(before, after CPUTimes, roles map[int]string) map[string]float64 {
	out := map[string]float64{}
	for p, t := range after {
		role, ok := roles[p.PID]
		if p.Group != "postgres" || p.Reaped || !ok {
			continue
		}
		out[role] += t - before[p]
	}
	return out
}

// cpuSpans adds up the CPU each group used over separate spans of time,
// and their wall time: a stage's parts that alternate with others.
type cpuSpans struct {
	seconds map[string]float64
	wall    float64
}

// add counts the span between two readings, wall seconds long.
func (c *cpuSpans) add(before, after CPUTimes, wall float64) {
	if c.seconds == nil {
		c.seconds = map[string]float64{}
	}
	for group, s := range cpuSeconds(before, after) {
		c.seconds[group] += s
	}
	c.wall += wall
}

// cores is the cores each group used over the spans (see Cores).
func (c cpuSpans) cores() map[string]float64 { return coresOf(c.seconds, c.wall) }
