// Package fauxqs runs a private fauxqs SQS emulator as a child process on a
// port of its own, with the Node 22 and fauxqs installed in the repository's
// localstack folder, so a test or a chaos run can stop and restart SQS. Its
// queues live in memory: a restart empties them.
package fauxqs

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onceflow/onceflow/pkg/listener"
)

// Server is one fauxqs process, stopped or running.
type Server struct {
	node, launcher string
	addr           string

	mu       sync.Mutex
	reserved *listener.Reserved // the port, bound while no process serves on it yet
	cmd      *exec.Cmd
	exited   chan struct{}
}

// New prepares a server on a free loopback port using the installation in
// localstackDir; it fails, saying how to install, when that is missing. The
// port stays bound from here until the first Start hands it to fauxqs
// (package listener), so nothing else can take it meanwhile; Stop releases
// it.
func New(localstackDir string) (*Server, error) {
	s := &Server{node: filepath.Join(localstackDir, "node_modules", ".bin", "node"), launcher: filepath.Join(localstackDir, "fauxqs.mjs")}
	for _, p := range []string{s.node, filepath.Join(localstackDir, "node_modules", "fauxqs", "package.json")} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("fauxqs is not installed (%v): run `cd %s && npm ci`", err, localstackDir)
		}
	}
	r, err := listener.Reserve("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.addr, s.reserved = r.Addr(), r
	return s, nil
}

// Endpoint is the server's URL, the value for AWS_ENDPOINT_URL_SQS.
func (s *Server) Endpoint() string { return "http://" + s.addr }

// Start runs the server on its port and waits up to 30 s until it answers;
// it does nothing when the server is running. A restart binds the port
// again before handing it to fauxqs.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	cmd, output, err := s.start()
	if err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(30 * time.Second)
	for !s.healthy() {
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("fauxqs exited on start (%s):\n%s", s.addr, output.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("fauxqs did not answer on " + s.Endpoint())
		}
	}
	return nil
}

// start launches fauxqs on the server's socket, passed down as a
// descriptor (FAUXQS_LISTEN_FD, read by localstack/fauxqs.mjs).
func (s *Server) start() (*exec.Cmd, *bytes.Buffer, error) {
	if s.reserved == nil {
		r, err := listener.Reserve(s.addr)
		if err != nil {
			return nil, nil, fmt.Errorf("restart fauxqs: %w", err)
		}
		s.reserved = r
	}
	defer s.release() // fauxqs holds the socket now, or no one does
	cmd := exec.Command(s.node, "--disable-warning=ExperimentalWarning", s.launcher)
	fd, err := s.reserved.Pass(cmd)
	if err != nil {
		return nil, nil, err
	}
	cmd.Env = append(os.Environ(), "FAUXQS_LISTEN_FD="+strings.TrimPrefix(fd, "fd:"),
		"FAUXQS_PORT="+strconv.Itoa(s.reserved.Port()), "FAUXQS_LOGGER=false", "FAUXQS_INIT=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	output := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start fauxqs: %w", err)
	}
	return cmd, output, nil
}

// release closes this process's hold on the reserved port, if any.
func (s *Server) release() {
	if s.reserved != nil {
		_ = s.reserved.Close()
		s.reserved = nil
	}
}

// Stop kills the server and waits until it has exited, so its port refuses
// connections. When the server is stopped it does nothing but release the
// port New reserved if it never started.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release()
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

func (s *Server) healthy() bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(s.Endpoint() + "/health")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// LocalstackDir finds the repository's localstack folder by walking up from
// the working directory to the go.mod file.
func LocalstackDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "localstack"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: cannot find localstack/ with fauxqs")
		}
		dir = parent
	}
}
