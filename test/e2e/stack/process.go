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
// keeps across restarts. reserved holds the address bound while no process
// serves on it yet; each start passes the socket down (package listener).
type process struct {
	name, bin, addr string
	reserved        *listener.Reserved
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

// URL is the base URL of a running process, e.g. URL("relay-1").
func (s *Stack) URL(name string) string { return "http://" + s.procs[name].addr }

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
	cmd.Env = append(cmd.Env, addrVar(p.bin)+"="+listen, "RELAY_HOLDER="+name)
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

// pass hands the process's socket to cmd: the one reserved at launch, or,
// on a restart, its address bound again.
func (p *process) pass(cmd *exec.Cmd) (string, error) {
	if p.reserved == nil {
		r, err := listener.Reserve(p.addr)
		if err != nil {
			return "", fmt.Errorf("restart %s: %w", p.name, err)
		}
		p.reserved = r
	}
	return p.reserved.Pass(cmd)
}

// release closes this process's hold on the reserved socket, if any.
func (p *process) release() {
	if p.reserved != nil {
		_ = p.reserved.Close()
		p.reserved = nil
	}
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
