// Package stack runs the whole onceflow pipeline as separate processes on
// this machine — both sandboxes and every service — against the PostgreSQL
// and SQS named by DATABASE_URL and AWS_ENDPOINT_URL_SQS. The end-to-end
// tests and `make demo` share it.
package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/pkg/sqsq"
)

// Binaries are the commands the stack runs, by name, with their packages.
var Binaries = map[string]string{
	"ingest": "./services/ingest/cmd/ingest", "relay": "./services/relay/cmd/relay",
	"invoicer": "./services/invoicer/cmd/invoicer", "reconciler": "./services/reconciler/cmd/reconciler",
	"psp": "./sandbox/cmd/psp", "fiscal": "./sandbox/cmd/fiscal",
}

// Credentials shared by the sandboxes and the services.
const (
	Login     = "e2e-login"
	TransKey  = "e2e-trans-key"
	SecretKey = "e2e-secret-key"
	APIToken  = "e2e-api-token"
)

// Stack is a running pipeline.
type Stack struct {
	Dir        string // binaries and logs
	Database   string // the stack's own database
	IngestURL  string
	PSPURL     string
	FiscalURL  string
	env        []string
	procs      []*exec.Cmd
	adminDSN   string
	dbName     string
	keepDBName bool
}

// Build compiles every binary into dir from the repository root.
func Build(ctx context.Context, root, dir string) error {
	for name, pkg := range Binaries {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, name), pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %w\n%s", name, err, out)
		}
	}
	return nil
}

// Root finds the repository root from the working directory.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.work not found above the working directory")
		}
		dir = parent
	}
}

// Start builds the binaries into dir, creates a fresh database and uniquely
// named queues, and starts the sandboxes and services, waiting until each
// answers /healthz.
func Start(ctx context.Context, dir string) (*Stack, error) {
	admin, endpoint := os.Getenv("DATABASE_URL"), os.Getenv("AWS_ENDPOINT_URL_SQS")
	if admin == "" || endpoint == "" {
		return nil, errors.New("DATABASE_URL and AWS_ENDPOINT_URL_SQS must point at PostgreSQL and an SQS server: run `eval \"$(scripts/stack.sh env)\"` or `make test`")
	}
	root, err := Root()
	if err != nil {
		return nil, err
	}
	if err := Build(ctx, root, dir); err != nil {
		return nil, err
	}
	s := &Stack{Dir: dir, adminDSN: admin}
	if err := s.createDatabase(ctx); err != nil {
		return nil, err
	}
	suffix := randomHex(4)
	queues := map[string]string{"BILLING": "onceflow-billing-" + suffix, "PROVIDER": "onceflow-provider-events-" + suffix, "NOTIFY": "onceflow-notifications-" + suffix}
	if err := createQueues(ctx, endpoint, queues); err != nil {
		return nil, err
	}
	s.env = append(os.Environ(), "DATABASE_URL="+s.Database, "LOG_LEVEL=info",
		"DLOCAL_LOGIN="+Login, "DLOCAL_TRANS_KEY="+TransKey, "DLOCAL_SECRET_KEY="+SecretKey, "API_TOKEN="+APIToken,
		"INVOICY_EMP_CODIGO=e2e-emp", "INVOICY_EMP_PK=e2e-pk", "INVOICY_ACCESS_KEY=e2e-access-key",
		"BILLING_QUEUE="+queues["BILLING"], "CONSUMER_WAIT=1s", "APPLY_POLL_INTERVAL=200ms", "EMIT_POLL_INTERVAL=200ms",
		"PSP_RETRY_DELAY=200ms", "RECONCILER_GRACE=0s",
		"RELAY_ROUTES=ingest.outbox=billing.>"+queues["BILLING"]+",provider.>"+queues["PROVIDER"]+";invoicer.outbox=notification.>"+queues["NOTIFY"])
	if err := s.launch(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Stack) launch(ctx context.Context) error {
	ports := map[string]string{}
	for _, name := range []string{"psp", "fiscal", "ingest", "relay", "invoicer"} {
		p, err := freePort()
		if err != nil {
			return err
		}
		ports[name] = p
	}
	s.PSPURL, s.FiscalURL, s.IngestURL = "http://"+ports["psp"], "http://"+ports["fiscal"], "http://"+ports["ingest"]
	s.env = append(s.env, "DLOCAL_BASE_URL="+s.PSPURL, "INVOICY_BASE_URL="+s.FiscalURL+"/InvoiCy",
		"PSP_ADDR="+ports["psp"], "FISCAL_ADDR="+ports["fiscal"], "PSP_NOTIFY_URL="+s.IngestURL+"/webhooks/dlocal")
	for _, name := range []string{"ingest", "relay", "invoicer", "reconciler"} {
		if out, err := s.command(ctx, name, "migrate").CombinedOutput(); err != nil {
			return fmt.Errorf("migrate %s: %w\n%s", name, err, out)
		}
	}
	for _, name := range []string{"psp", "fiscal", "ingest", "relay", "invoicer"} {
		if err := s.startProcess(ctx, name, ports[name]); err != nil {
			return err
		}
	}
	return nil
}

func (s *Stack) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.Dir, name), args...)
	cmd.Env = s.env
	return cmd
}

func (s *Stack) startProcess(ctx context.Context, name, addr string) error {
	logFile, err := os.Create(filepath.Join(s.Dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := s.command(context.WithoutCancel(ctx), name, "serve")
	cmd.Env = append(cmd.Env, "HTTP_ADDR="+addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	s.procs = append(s.procs, cmd)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, _ := os.ReadFile(logFile.Name())
	return fmt.Errorf("%s did not answer /healthz within 30s; its log:\n%s", name, out)
}

// RunReconciler runs the reconciler once and returns its output.
func (s *Stack) RunReconciler(ctx context.Context) (string, error) {
	out, err := s.command(ctx, "reconciler", "run-once").CombinedOutput()
	return string(out), err
}

// Stop ends every process (SIGTERM, then SIGKILL after 10 s) and drops the
// stack's database.
func (s *Stack) Stop() {
	for _, p := range s.procs {
		_ = p.Process.Signal(os.Interrupt)
	}
	for _, p := range s.procs {
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.Process.Kill()
		}
	}
	if s.dbName != "" && !s.keepDBName {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, s.adminDSN); err == nil {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+s.dbName+" WITH (FORCE)")
			conn.Close(ctx)
		}
	}
}

func (s *Stack) createDatabase(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.adminDSN)
	if err != nil {
		return fmt.Errorf("connect DATABASE_URL: %w", err)
	}
	defer conn.Close(ctx)
	s.dbName = "onceflow_e2e_" + randomHex(5)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+s.dbName); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(s.adminDSN)
	if err != nil {
		return err
	}
	u.Path = "/" + s.dbName
	s.Database = u.String()
	return nil
}

func createQueues(ctx context.Context, endpoint string, names map[string]string) error {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	c, err := sqsq.NewClient(ctx, region, endpoint)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, err := sqsq.EnsureQueue(ctx, c, n, 5); err != nil {
			return err
		}
	}
	return nil
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
