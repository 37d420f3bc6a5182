package stack

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/onceflow/onceflow/pkg/listener"
)

// process is one service or sandbox instance on a fixed address, which
// keeps across restarts; a service also has an admin address (ADMIN_ADDR).
// reserved holds the addresses bound while no process serves on them yet;
// each start passes the sockets down (package listener).
type process struct {
	name, bin, addr string
	adminAddr       string // "" for the sandboxes
	reserved        map[string]*listener.Reserved
	cmd             *exec.Cmd
	exited          chan struct{}
}

// addrVar is the variable that tells binary bin where to serve.
func addrVar(bin string) string {
	switch bin {
	case "psp":
		return "PSP_ADDR"
	case "fiscal":
		return "FISCAL_ADDR"
	}
	return "HTTP_ADDR"
}

// Names lists the stack's processes running binary bin ("" for all), sorted.
func (s *Stack) Names(bin string) []string {
	var out []string
	for name, p := range s.procs {
		if bin == "" || p.bin == bin {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// URL is the base URL of a running process's public port, e.g.
// URL("ingest-1").
func (s *Stack) URL(name string) string { return "http://" + s.procs[name].addr }

// AdminURL is the base URL of a running service's admin port (/admin,
// /metrics, /debug/pprof), e.g. AdminURL("relay-1").
func (s *Stack) AdminURL(name string) string { return "http://" + s.procs[name].adminAddr }

// Kill sends SIGKILL to the process and waits until it is gone.
func (s *Stack) Kill(name string) error {
	p, ok := s.procs[name]
	if !ok || p.cmd == nil {
		return fmt.Errorf("no running process %q", name)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	p.cmd = nil
	return nil
}

// Restart starts the process (again) on its address, its log appended to
// <name>.log, and waits until it answers /healthz.
func (s *Stack) Restart(ctx context.Context, name string) error {
	p := s.procs[name]
	if p.cmd != nil {
		return nil
	}
	logFile, err := os.OpenFile(filepath.Join(s.Dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := s.command(context.WithoutCancel(ctx), p.bin, "serve")
	listen, err := p.pass(cmd)
	if err != nil {
		return err
	}
	for variable, addr := range listen {
		cmd.Env = append(cmd.Env, variable+"="+addr)
	}
	cmd.Env = append(cmd.Env, "RELAY_HOLDER="+name)
	if dsn := s.serviceDSN(p.bin); dsn != "" {
		cmd.Env = append(cmd.Env, "DATABASE_URL="+dsn) // the last of a name wins
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	err = cmd.Start()
	p.release() // the child holds the socket now, or no one does
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) { _ = cmd.Wait(); close(exited) }(p.exited)
	return p.waitHealthy(ctx, filepath.Join(s.Dir, name+".log"))
}

// addrs maps each address variable of the process to its address.
func (p *process) addrs() map[string]string {
	out := map[string]string{addrVar(p.bin): p.addr}
	if p.adminAddr != "" {
		out["ADMIN_ADDR"] = p.adminAddr
	}
	return out
}

// reserve binds the process's addresses ("127.0.0.1:0" picks a free port
// at launch, a restart binds the ones it held) and keeps them bound until
// passed on.
func (p *process) reserve() error {
	p.reserved = map[string]*listener.Reserved{}
	for variable, addr := range p.addrs() {
		r, err := listener.Reserve(addr)
		if err != nil {
			p.release()
			return fmt.Errorf("start %s: %w", p.name, err)
		}
		p.reserved[variable] = r
	}
	return nil
}

// pass hands the process's sockets to cmd (reserving them again on a
// restart) and returns the address setting of each variable, "fd:N".
func (p *process) pass(cmd *exec.Cmd) (map[string]string, error) {
	if p.reserved == nil {
		if err := p.reserve(); err != nil {
			return nil, err
		}
	}
	out := map[string]string{}
	for variable, r := range p.reserved {
		fd, err := r.Pass(cmd)
		if err != nil {
			return nil, err
		}
		out[variable] = fd
	}
	return out, nil
}

// release closes this process's hold on the reserved sockets, if any.
func (p *process) release() {
	for _, r := range p.reserved {
		_ = r.Close()
	}
	p.reserved = nil
}

func (p *process) waitHealthy(ctx context.Context, logPath string) error {
	// The port accepts connections before the process serves them, so
	// each probe has its own deadline.
	probe := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("%s exited on start; its log:\n%s", p.name, out)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if resp, err := probe.Get("http://" + p.addr + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, _ := os.ReadFile(logPath)
	return fmt.Errorf("%s did not answer /healthz within 30s; its log:\n%s", p.name, out)
}

// stop asks the process to end and kills it after grace.
func (p *process) stop(grace time.Duration) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.cmd = nil
}
