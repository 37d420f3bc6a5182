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
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/provider/fiscal"
)

// Binaries are the commands the stack runs, by name, with their packages.
var Binaries = map[string]string{
	"ingest": "./services/ingest/cmd/ingest", "relay": "./services/relay/cmd/relay",
	"invoicer": "./services/invoicer/cmd/invoicer", "reconciler": "./services/reconciler/cmd/reconciler",
	"psp": "./sandbox/cmd/psp", "fiscal": "./sandbox/cmd/fiscal", "onceflowctl": "./onceflowctl",
	"console": "./services/console/cmd/console",
}

// Credentials shared by the sandboxes and the services.
const (
	Login      = "e2e-login"
	TransKey   = "e2e-trans-key"
	SecretKey  = "e2e-secret-key"
	APIToken   = "e2e-api-token"
	AdminToken = "e2e-admin-token"
	// RelayKey signs the billing messages, provider events and
	// notifications the relay publishes, the only producer of them (the
	// reconciler's sweep asks ingest to announce an event again); the
	// invoicer trusts it alone, on both queues, and so does ingest on the
	// notifications queue.
	RelayKey = "e2e-relay:e2e-relay-signing-secret"
	// The Stripe and Mercado Pago sandboxes' credentials and webhook
	// secrets (the sandbox binary "psp" serves them beside dLocal).
	StripeKey           = "sk_test_e2e_stripe_key"
	StripeWebhookSecret = "whsec_e2e_stripe_webhook_secret"
	MPToken             = "TEST-e2e-mercadopago-token"
	MPWebhookSecret     = "e2e-mercadopago-webhook-secret"
)

// sourcesFile is ingest's INGEST_WEBHOOK_SOURCES_FILE: one psp source per
// PSP the sandbox speaks, each at /webhooks/<psp>.
const sourcesFile = `sources:
  - {name: dlocal, kind: psp, psp: dlocal, login: env:DLOCAL_LOGIN, secrets: [env:DLOCAL_SECRET_KEY]}
  - {name: stripe, kind: psp, psp: stripe, secrets: [env:STRIPE_WEBHOOK_SECRET]}
  - {name: mercadopago, kind: psp, psp: mercadopago, secrets: [env:MERCADOPAGO_WEBHOOK_SECRET]}
`

// Stack is a running pipeline.
type Stack struct {
	Dir        string   // binaries and logs
	Database   string   // the stack's own database
	IngestURL  string   // the first ingest instance
	IngestURLs []string // every ingest instance
	PSPURL     string   // dLocal; Stripe under /stripe, Mercado Pago under /mercadopago
	FiscalURL  string
	ConsoleURL string            // with Options.Console
	Queues     map[string]string // BILLING, PROVIDER, NOTIFY: the queue names
	env        []string
	procs      map[string]*process
	order      []string
	adminDSN   string
	dbName     string
	keepDBName bool
	roles      bool // each service connects as db.Role(its schema)
}

// Options shape a stack; the zero value is one instance of each service.
type Options struct {
	// AdminDSN is the PostgreSQL server's superuser URL, where the stack
	// creates its database; SQSEndpoint the SQS server. Both default to
	// DATABASE_URL and AWS_ENDPOINT_URL_SQS.
	AdminDSN, SQSEndpoint string
	// Instances of ingest, relay and invoicer (default 1 each).
	Instances int
	// Reconciler runs the reconciler in serve mode too (else only RunReconciler).
	Reconciler bool
	// Console runs the console too (it needs Reconciler, and a users file
	// or OIDC in Env), over the first instance of each service.
	Console bool
	// Env adds or overrides variables of every process.
	Env []string
	// PSPAudit turns the reconciler's PSP audit on (it is off otherwise);
	// the reconciler always reaches the first ingest instance's admin API,
	// where its sweep asks ingest to announce a lost event again.
	PSPAudit bool
	// ServiceRoles connects each service as its own least-privilege role
	// (db.ApplyRoles, run after the migrations) instead of as DATABASE_URL's
	// user, as deployed; it needs a server that trusts local connections.
	// PostgreSQL's statistics then tell the services apart by user.
	ServiceRoles bool
}

// build compiles every binary into dir from the repository root, in one
// go build (which links them side by side). Each is named after the last
// element of its package, as Binaries names it.
func build(ctx context.Context, root, dir string) error {
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, pkg := range Binaries {
		args = append(args, pkg)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %w\n%s", strings.Join(args[3:], " "), err, out)
	}
	for name, pkg := range Binaries {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("build %s: no binary %s: %w", pkg, name, err)
		}
	}
	return nil
}

// shared is the directory every stack of this process links its binaries
// from, built on the first stack's start (see ShareBuild); with dir ""
// each stack builds its own.
var shared struct {
	sync.Mutex
	dir   string
	built bool
}

// ShareBuild runs run (a test binary's m.Run) with one build of the
// binaries, in a directory it removes afterwards, for every stack run
// starts: each links them into its own directory instead of building and
// linking all of them again. It returns run's exit code.
func ShareBuild(run func() int) int {
	dir, err := os.MkdirTemp("", "onceflow-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "stack: directory for the shared build:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	shared.Lock()
	shared.dir, shared.built = dir, false
	shared.Unlock()
	return run()
}

// install puts every binary into dir: hard links to the shared build under
// ShareBuild (dir must be on its file system, as t.TempDir is), else a
// build of dir's own.
func install(ctx context.Context, root, dir string) error {
	shared.Lock()
	defer shared.Unlock()
	if shared.dir == "" {
		return build(ctx, root, dir)
	}
	if !shared.built {
		if err := build(ctx, root, shared.dir); err != nil {
			return err
		}
		shared.built = true
	}
	for name := range Binaries {
		if err := os.Link(filepath.Join(shared.dir, name), filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("stack: the shared build's %s: %w", name, err)
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
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Start runs one instance of everything with the defaults; see StartWith.
func Start(ctx context.Context, dir string) (*Stack, error) {
	return StartWith(ctx, dir, Options{})
}

// StartWith builds the binaries into dir (or links them, see ShareBuild),
// creates a fresh database and uniquely named queues, and starts the
// sandboxes and services, waiting until each answers /healthz.
func StartWith(ctx context.Context, dir string, o Options) (*Stack, error) {
	if o.AdminDSN == "" {
		o.AdminDSN = os.Getenv("DATABASE_URL")
	}
	if o.SQSEndpoint == "" {
		o.SQSEndpoint = os.Getenv("AWS_ENDPOINT_URL_SQS")
	}
	if o.Console && !o.Reconciler {
		return nil, errors.New("stack: the console needs the reconciler (Options.Reconciler)")
	}
	if o.AdminDSN == "" || o.SQSEndpoint == "" {
		return nil, errors.New("DATABASE_URL and AWS_ENDPOINT_URL_SQS must point at PostgreSQL and an SQS server: run `eval \"$(scripts/stack.sh env)\"` or `make test`")
	}
	root, err := Root()
	if err != nil {
		return nil, err
	}
	if err := install(ctx, root, dir); err != nil {
		return nil, err
	}
	s := &Stack{Dir: dir, adminDSN: o.AdminDSN, procs: map[string]*process{}}
	if err := s.createDatabase(ctx); err != nil {
		return nil, err
	}
	suffix := randomHex(4)
	s.Queues = map[string]string{"BILLING": "onceflow-billing-" + suffix, "PROVIDER": "onceflow-provider-events-" + suffix, "NOTIFY": "onceflow-notifications-" + suffix}
	if err := CreateQueues(ctx, o.SQSEndpoint, s.Queues); err != nil {
		return nil, err
	}
	s.env = append(os.Environ(), "DATABASE_URL="+s.Database, "AWS_ENDPOINT_URL_SQS="+o.SQSEndpoint, "LOG_LEVEL=info",
		"DLOCAL_LOGIN="+Login, "DLOCAL_TRANS_KEY="+TransKey, "DLOCAL_SECRET_KEY="+SecretKey, "INGEST_API_TOKEN="+APIToken, "ADMIN_TOKEN="+AdminToken,
		"INVOICY_EMP_CODIGO=e2e-emp", "INVOICY_EMP_PK=e2e-pk", "INVOICY_ACCESS_KEY=e2e-access-key",
		"INGEST_APPLY_POLL_INTERVAL=200ms", "INGEST_NOTIFICATIONS_QUEUE="+s.Queues["NOTIFY"], "INGEST_NOTIFICATIONS_WAIT=1s",
		"INVOICER_BILLING_QUEUE="+s.Queues["BILLING"], "INVOICER_PROVIDER_EVENTS_QUEUE="+s.Queues["PROVIDER"], "INVOICER_CONSUMER_WAIT=1s", "INVOICER_EMIT_POLL_INTERVAL=200ms",
		"PSP_RETRY_DELAY=200ms", "RECONCILER_GRACE=0s",
		"RELAY_SIGNING_KEY="+RelayKey, "INVOICER_BILLING_KEYS="+RelayKey, "INVOICER_PROVIDER_EVENTS_KEYS="+RelayKey, "INGEST_NOTIFICATIONS_KEYS="+RelayKey,
		"RELAY_ROUTES=ingest.outbox=billing.>"+s.Queues["BILLING"]+",provider.>"+s.Queues["PROVIDER"]+";invoicer.outbox=notification.>"+s.Queues["NOTIFY"])
	rates, err := writeRates(dir)
	if err != nil {
		return nil, err
	}
	sources := filepath.Join(dir, "sources.yaml")
	if err := os.WriteFile(sources, []byte(sourcesFile), 0o644); err != nil {
		return nil, err
	}
	s.env = append(s.env, "INVOICER_BCU_URL=off", "INVOICER_RATES_FILE="+rates, "INGEST_WEBHOOK_SOURCES_FILE="+sources,
		"STRIPE_API_KEY="+StripeKey, "STRIPE_WEBHOOK_SECRET="+StripeWebhookSecret,
		"MERCADOPAGO_ACCESS_TOKEN="+MPToken, "MERCADOPAGO_WEBHOOK_SECRET="+MPWebhookSecret)
	s.env = append(s.env, o.Env...)
	if err := s.launch(ctx, o); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Stack) launch(ctx context.Context, o Options) error {
	n := max(o.Instances, 1)
	names := []string{"psp", "fiscal"}
	for _, svc := range []string{"ingest", "relay", "invoicer"} {
		for i := 1; i <= n; i++ {
			names = append(names, fmt.Sprintf("%s-%d", svc, i))
		}
	}
	if o.Reconciler {
		names = append(names, "reconciler-1")
	}
	if o.Console {
		names = append(names, "console-1")
	}
	for _, name := range names {
		// Every port is bound from here until its process takes the socket
		// over, so no two processes can be given the same one.
		p := &process{name: name, bin: binary(name), addr: "127.0.0.1:0"}
		if p.bin != "psp" && p.bin != "fiscal" { // the sandboxes have no admin port
			p.adminAddr = "127.0.0.1:0"
		}
		if err := p.reserve(); err != nil {
			return err
		}
		p.addr = p.reserved[addrVar(p.bin)].Addr()
		if r, ok := p.reserved["ADMIN_ADDR"]; ok {
			p.adminAddr = r.Addr()
		}
		addr := p.addr
		s.procs[name] = p
		s.order = append(s.order, name)
		if binary(name) == "ingest" {
			s.IngestURLs = append(s.IngestURLs, "http://"+addr)
		}
	}
	s.PSPURL, s.FiscalURL, s.IngestURL = "http://"+s.procs["psp"].addr, "http://"+s.procs["fiscal"].addr, s.IngestURLs[0]
	s.env = append(s.env, "DLOCAL_BASE_URL="+s.PSPURL, "INVOICY_BASE_URL="+s.FiscalURL+"/InvoiCy",
		"STRIPE_BASE_URL="+s.PSPURL+"/stripe", "MERCADOPAGO_BASE_URL="+s.PSPURL+"/mercadopago",
		"PSP_NOTIFY_URL="+s.IngestURL+"/webhooks/dlocal", "STRIPE_NOTIFY_URL="+s.IngestURL+"/webhooks/stripe",
		"MERCADOPAGO_NOTIFY_URL="+s.IngestURL+"/webhooks/mercadopago")
	if o.Console {
		s.ConsoleURL = "http://" + s.procs["console-1"].addr
		s.env = append(s.env, "CONSOLE_INGEST_ADMIN_URL="+s.AdminURL("ingest-1"), "CONSOLE_RELAY_ADMIN_URL="+s.AdminURL("relay-1"),
			"CONSOLE_INVOICER_ADMIN_URL="+s.AdminURL("invoicer-1"), "CONSOLE_RECONCILER_ADMIN_URL="+s.AdminURL("reconciler-1"),
			"CONSOLE_QUEUES="+s.Queues["BILLING"]+","+s.Queues["PROVIDER"]+","+s.Queues["NOTIFY"])
	}
	s.env = append(s.env, "RECONCILER_INGEST_ADMIN_URL="+s.AdminURL("ingest-1"), "RECONCILER_INGEST_ADMIN_TOKEN="+AdminToken)
	if !o.PSPAudit {
		s.env = append(s.env, "RECONCILER_PSP_AUDIT=off")
	}
	if err := s.Migrate(ctx); err != nil {
		return err
	}
	if o.ServiceRoles {
		if err := db.ApplyRoles(ctx, s.Database, nil); err != nil {
			return err
		}
		s.roles = true
	}
	for _, name := range s.order {
		if err := s.Restart(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// Migrate applies every service's migrations to the stack's database.
func (s *Stack) Migrate(ctx context.Context) error {
	for _, name := range []string{"ingest", "relay", "invoicer", "reconciler"} {
		if out, err := s.command(ctx, name, "migrate").CombinedOutput(); err != nil {
			return fmt.Errorf("migrate %s: %w\n%s", name, err, out)
		}
	}
	return nil
}

// binary is the binary a process name runs: "ingest-2" runs ingest.
func binary(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		return name[:i]
	}
	return name
}

func (s *Stack) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.Dir, name), args...)
	cmd.Env = s.env
	return cmd
}

// serviceDSN is the database URL binary bin serves with: the stack's, as
// the service's own role with Options.ServiceRoles; "" to keep the stack's.
func (s *Stack) serviceDSN(bin string) string {
	if !s.roles || !slices.Contains(db.Schemas, bin) {
		return ""
	}
	u, err := url.Parse(s.Database)
	if err != nil {
		return ""
	}
	u.User = url.User(db.Role(bin))
	return u.String()
}

// RunReconciler runs the reconciler once and returns its output.
func (s *Stack) RunReconciler(ctx context.Context) (string, error) {
	out, err := s.command(ctx, "reconciler", "run-once").CombinedOutput()
	return string(out), err
}

// Stop ends every process (SIGTERM, then SIGKILL after 10 s) and drops the
// stack's database.
func (s *Stack) Stop() {
	for _, name := range s.order {
		s.procs[name].stop(10 * time.Second)
		s.procs[name].release()
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

// CreateQueues creates each named queue, with its dead-letter queue, at the
// SQS endpoint; existing queues are kept.
func CreateQueues(ctx context.Context, endpoint string, names map[string]string) error {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	c, err := sqsclient.NewClient(ctx, region, endpoint)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, err := sqsclient.EnsureQueue(ctx, c, n, 5); err != nil {
			return err
		}
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Demo exchange rates the stack's invoicer loads (INVOICER_RATES_FILE; BCU is
// not asked): the dollar and the UI, for a week around today.
const (
	DemoUSDRate = "40.123"
	DemoUIValue = "6.4123"
)

// writeRates writes the rates file into dir and returns its path.
func writeRates(dir string) (string, error) {
	var b strings.Builder
	b.WriteString("code,date,value\n")
	today := time.Now().In(fiscal.Montevideo)
	for d := -3; d <= 3; d++ {
		day := today.AddDate(0, 0, d).Format(time.DateOnly)
		fmt.Fprintf(&b, "USD,%s,%s\nUYI,%s,%s\n", day, DemoUSDRate, day, DemoUIValue)
	}
	path := filepath.Join(dir, "rates.csv")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}
