package stack

// PID is the operating-system process id of the named process (see Names),
// or 0 when it is not running; benchmarks read its CPU time from /proc.
func (s *Stack) PID(name string) int {
	p, ok := s.procs[name]
	if !ok || p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}
