// Package fauxqs runs a private fauxqs SQS emulator as a child process on a
// port of its own, with the Node 22 and fauxqs installed in the repository's
// localstack folder, so a test or a chaos run can stop and restart SQS. Its
// queues live in memory: a restart empties them.
package fauxqs

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Server is one fauxqs process, stopped or running.
type Server struct {
	node, launcher string
	port           int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// New prepares a server on a free loopback port using the installation in
// localstackDir; it fails, saying how to install, when that is missing.
func New(localstackDir string) (*Server, error) {
	s := &Server{node: filepath.Join(localstackDir, "node_modules", ".bin", "node"), launcher: filepath.Join(localstackDir, "fauxqs.mjs")}
	for _, p := range []string{s.node, filepath.Join(localstackDir, "node_modules", "fauxqs", "package.json")} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("fauxqs is not installed (%v): run `cd %s && npm ci`", err, localstackDir)
		}
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	s.port = port
	return s, nil
}

// Endpoint is the server's URL, the value for AWS_ENDPOINT_URL_SQS.
func (s *Server) Endpoint() string { return "http://127.0.0.1:" + strconv.Itoa(s.port) }

// Start runs the server on its port and waits up to 30 s until it answers;
// it does nothing when the server is running.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	cmd := exec.Command(s.node, "--disable-warning=ExperimentalWarning", s.launcher)
	cmd.Env = append(os.Environ(), "FAUXQS_BIND=127.0.0.1", "FAUXQS_PORT="+strconv.Itoa(s.port), "FAUXQS_LOGGER=false", "FAUXQS_INIT=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start fauxqs: %w", err)
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
			return fmt.Errorf("fauxqs exited on start (port %d):\n%s", s.port, output.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("fauxqs did not answer on " + s.Endpoint())
		}
	}
	return nil
}

// Stop kills the server and waits until it has exited, so its port refuses
// connections; it does nothing when the server is stopped.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
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

// FreePort returns a loopback port nothing listens on now.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
