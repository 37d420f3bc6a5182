package sqstest

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/onceflow/onceflow/pkg/sqsq"
)

// Fauxqs is a private fauxqs server on a port of its own, for tests that
// stop and restart SQS. Its queues live in memory: a restart empties it.
type Fauxqs struct {
	tb       testing.TB
	node     string
	launcher string
	port     int
	cmd      *exec.Cmd
	exited   chan struct{}
}

// StartFauxqs starts fauxqs on a free loopback port with the Node 22 and
// fauxqs installed in the repository's localstack folder, and stops it when
// the test ends. The test fails, saying how to install them, when they are
// missing.
func StartFauxqs(tb testing.TB) *Fauxqs {
	tb.Helper()
	dir := localstackDir(tb)
	f := &Fauxqs{tb: tb, node: filepath.Join(dir, "node_modules", ".bin", "node"), launcher: filepath.Join(dir, "fauxqs.mjs")}
	for _, p := range []string{f.node, filepath.Join(dir, "node_modules", "fauxqs", "package.json")} {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("fauxqs is not installed (%v): run `cd %s && npm ci`", err, dir)
		}
	}
	f.port = freePort(tb)
	tb.Cleanup(f.Stop)
	f.Start()
	return f
}

// Endpoint is the server's URL, the value for AWS_ENDPOINT_URL_SQS.
func (f *Fauxqs) Endpoint() string { return "http://127.0.0.1:" + strconv.Itoa(f.port) }

// Client returns an SQS client for this server.
func (f *Fauxqs) Client() *sqs.Client {
	f.tb.Helper()
	c, err := sqsq.NewClient(context.Background(), "us-east-1", f.Endpoint())
	if err != nil {
		f.tb.Fatalf("sqs client: %v", err)
	}
	return c
}

// Start runs the server on its port and waits until it answers; it does
// nothing when the server is running.
func (f *Fauxqs) Start() {
	f.tb.Helper()
	if f.cmd != nil {
		return
	}
	cmd := exec.Command(f.node, "--disable-warning=ExperimentalWarning", f.launcher)
	cmd.Env = append(os.Environ(), "FAUXQS_BIND=127.0.0.1", "FAUXQS_PORT="+strconv.Itoa(f.port), "FAUXQS_LOGGER=false", "FAUXQS_INIT=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		f.tb.Fatalf("start fauxqs: %v", err)
	}
	f.cmd, f.exited = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(f.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !f.healthy() {
		select {
		case <-f.exited:
			f.tb.Fatalf("fauxqs exited on start (port %d):\n%s", f.port, output.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			f.tb.Fatalf("fauxqs did not answer on %s", f.Endpoint())
		}
	}
}

// Stop kills the server and waits until it has exited, so its port refuses
// connections; it does nothing when the server is stopped.
func (f *Fauxqs) Stop() {
	if f.cmd == nil {
		return
	}
	_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
	<-f.exited
	f.cmd = nil
}

func (f *Fauxqs) healthy() bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(f.Endpoint() + "/health")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// localstackDir finds the repository's localstack folder by walking up from
// the working directory to the go.work file.
func localstackDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return filepath.Join(dir, "localstack")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.work above the working directory: cannot find localstack/ with fauxqs")
		}
		dir = parent
	}
}

func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
