package app

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/invoicy"
)

// Config is the reconciler's configuration, read from the environment.
// DATABASE_URL (in config.Common) is the reconciler's own schema: runs,
// findings, leases.
type Config struct {
	config.Common

	// IngestDatabaseURL reaches the ingest schema (payments, refunds, outbox)
	// for reading; empty means DATABASE_URL.
	IngestDatabaseURL string `env:"INGEST_DATABASE_URL"`
	// InvoicerDatabaseURL reaches the invoicer schema (fiscal_documents) for
	// reading; empty means DATABASE_URL.
	InvoicerDatabaseURL string `env:"INVOICER_DATABASE_URL"`
	// RelayDatabaseURL reaches the relay schema (its leader leases) for
	// reading; empty means DATABASE_URL.
	RelayDatabaseURL string `env:"RELAY_DATABASE_URL"`
	// RetiredSigningKey and RetiredBillingQueue are settings of the
	// reconciler that sent billing events itself; the sweep now asks ingest
	// to announce them again, so they are read only to warn that they do
	// nothing.
	RetiredSigningKey   string `env:"RECONCILER_SIGNING_KEY"`
	RetiredBillingQueue string `env:"RECONCILER_BILLING_QUEUE"`
	// Interval is the time between reconciliations in serve.
	Interval time.Duration `env:"RECONCILER_INTERVAL" envDefault:"1m"`
	// DeadLetterQueues are the dead-letter queues, by name, whose depth serve
	// reports as onceflow_dead_letter_messages every DeadLetterInterval.
	DeadLetterQueues   []string      `env:"RECONCILER_DEAD_LETTER_QUEUES" envDefault:"onceflow-billing-dlq,onceflow-provider-events-dlq,onceflow-notifications-dlq"`
	DeadLetterInterval time.Duration `env:"RECONCILER_DEAD_LETTER_INTERVAL" envDefault:"1m"`
	// Grace is how long a paid payment or succeeded refund may lack its
	// document before the sweep asks ingest to announce its event again.
	Grace time.Duration `env:"RECONCILER_GRACE" envDefault:"10m"`
	// PageSize is how many payments or refunds one sweep query reads.
	PageSize int `env:"RECONCILER_PAGE_SIZE" envDefault:"500"`
	// MaxPerRun caps the events one reconciliation asks ingest to announce
	// again.
	MaxPerRun int `env:"RECONCILER_MAX_PER_RUN" envDefault:"5000"`
	// SweepOverlap is how far before its watermark the sweep's recent pass
	// starts again, for a payment committed late or stamped by a clock
	// behind ours; each run re-reads what became final in it.
	SweepOverlap time.Duration `env:"RECONCILER_SWEEP_OVERLAP" envDefault:"2m"`
	// SweepFullSlice is how many payments, and as many refunds, the sweep's
	// full pass re-checks per run.
	SweepFullSlice int `env:"RECONCILER_SWEEP_FULL_SLICE" envDefault:"5000"`
	// RunsRetention is how long reconciler.runs keeps a run; zero keeps
	// every run.
	RunsRetention time.Duration `env:"RECONCILER_RUNS_RETENTION" envDefault:"720h"`
	// PushgatewayURL receives run-once's metrics when set (a one-off run is
	// gone before a scrape).
	PushgatewayURL string `env:"RECONCILER_PUSHGATEWAY_URL" renamed:"PUSHGATEWAY_URL"`
	// Detector thresholds: a receipt pending longer than PendingAfter, a
	// document in needs_attention longer than AttentionAfter, a row claim
	// expired longer than ClaimAfter without being taken over, and a relay
	// lease expired longer than LeaseAfter become findings.
	PendingAfter   time.Duration `env:"RECONCILER_PENDING_AFTER" envDefault:"15m"`
	AttentionAfter time.Duration `env:"RECONCILER_ATTENTION_AFTER" envDefault:"1h"`
	ClaimAfter     time.Duration `env:"RECONCILER_CLAIM_AFTER" envDefault:"10m"`
	LeaseAfter     time.Duration `env:"RECONCILER_LEASE_AFTER" envDefault:"5m"`

	// Audit turns the provider audit "on" or "off"; empty means on when
	// INVOICY_BASE_URL is set, so a deployment that names the provider
	// audits it.
	Audit string `env:"RECONCILER_AUDIT"`
	// AuditDays is how many calendar days (Montevideo time) the audit
	// covers, ending today: 2 is yesterday and today.
	AuditDays int `env:"RECONCILER_AUDIT_DAYS" envDefault:"2"`
	// AuditCurrentEvery is how often the audit lists today at the provider
	// (in full, or onward once today is too large for one answer), and
	// AuditPastEvery how often an earlier day of the period once it was
	// listed after it ended, and a large today in full; between listings a
	// run looks up only our documents that changed
	// (docs/reconciler-audit.md). Zero lists the day on every run.
	AuditCurrentEvery time.Duration `env:"RECONCILER_AUDIT_CURRENT_EVERY" envDefault:"10m"`
	AuditPastEvery    time.Duration `env:"RECONCILER_AUDIT_PAST_EVERY" envDefault:"6h"`
	// AuditRate paces the audit's listings: documents a second, averaged,
	// that they take at the provider; 0 does not pace them.
	AuditRate float64 `env:"RECONCILER_AUDIT_RATE" envDefault:"1000"`
	// Settings name the InvoiCy branch to audit and how to reach it
	// (INVOICY_*), the invoicer's settings type.
	invoicy.Settings
	ProviderTimeout   time.Duration `env:"RECONCILER_PROVIDER_TIMEOUT" renamed:"PROVIDER_TIMEOUT" envDefault:"15s"`
	ProviderStatusMap string        `env:"RECONCILER_PROVIDER_STATUS_MAP" renamed:"PROVIDER_STATUS_MAP"`

	// IngestAdminURL and IngestAdminToken (ingest's ADMIN_TOKEN) reach
	// ingest's admin API, required: the sweep asks ingest there to announce
	// a missing document's event again, and the PSP audit lists the PSPs'
	// payments through it.
	IngestAdminURL   string `env:"RECONCILER_INGEST_ADMIN_URL"`
	IngestAdminToken string `env:"RECONCILER_INGEST_ADMIN_TOKEN"`
	// PSPAudit turns the PSP audit "on" or "off"; empty means on. The
	// audit lists the PSPs' payments created from PSPAuditWindow to
	// PSPAuditSettle ago through ingest's admin API (which holds the PSP
	// adapters) and compares them with ingest's tables.
	PSPAudit        string        `env:"RECONCILER_PSP_AUDIT"`
	PSPAuditWindow  time.Duration `env:"RECONCILER_PSP_AUDIT_WINDOW" envDefault:"48h"`
	PSPAuditSettle  time.Duration `env:"RECONCILER_PSP_AUDIT_SETTLE" envDefault:"15m"`
	PSPAuditTimeout time.Duration `env:"RECONCILER_PSP_AUDIT_TIMEOUT" envDefault:"1m"`
}

// Values of RECONCILER_AUDIT.
const (
	AuditOn  = "on"
	AuditOff = "off"
)

// Validate checks every setting; the error names the variable and what it
// expects.
func (c Config) Validate() error {
	if err := c.Common.Validate(); err != nil {
		return err
	}
	var errs []error
	for _, v := range []struct{ name, value string }{
		{"INGEST_DATABASE_URL", c.IngestDatabaseURL},
		{"INVOICER_DATABASE_URL", c.InvoicerDatabaseURL},
		{"RELAY_DATABASE_URL", c.RelayDatabaseURL},
	} {
		if v.value == "" {
			continue
		}
		if u, err := url.Parse(v.value); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			errs = append(errs, fmt.Errorf("%s: want a postgres:// URL, or empty for DATABASE_URL", v.name))
		}
	}
	if c.Interval <= 0 {
		errs = append(errs, errors.New("RECONCILER_INTERVAL: want a positive duration such as 1m"))
	}
	if c.DeadLetterInterval <= 0 {
		errs = append(errs, errors.New("RECONCILER_DEAD_LETTER_INTERVAL: want a positive duration such as 1m"))
	}
	if c.Grace < 0 {
		errs = append(errs, errors.New("RECONCILER_GRACE: want a duration of zero or more, such as 10m"))
	}
	if c.PageSize < 1 || c.PageSize > 10000 {
		errs = append(errs, fmt.Errorf("RECONCILER_PAGE_SIZE: want 1 to 10000, got %d", c.PageSize))
	}
	if c.MaxPerRun < 1 {
		errs = append(errs, fmt.Errorf("RECONCILER_MAX_PER_RUN: want 1 or more, got %d", c.MaxPerRun))
	}
	if c.SweepOverlap <= 0 {
		errs = append(errs, errors.New("RECONCILER_SWEEP_OVERLAP: want a positive duration such as 2m"))
	}
	if c.SweepFullSlice < 1 {
		errs = append(errs, fmt.Errorf("RECONCILER_SWEEP_FULL_SLICE: want 1 or more, got %d", c.SweepFullSlice))
	}
	if c.RunsRetention != 0 && c.RunsRetention < 24*time.Hour {
		errs = append(errs, errors.New("RECONCILER_RUNS_RETENTION: want at least 24h (720h by default), or 0 to keep every run"))
	}
	for _, v := range []struct {
		name  string
		value time.Duration
	}{
		{"RECONCILER_PENDING_AFTER", c.PendingAfter}, {"RECONCILER_ATTENTION_AFTER", c.AttentionAfter},
		{"RECONCILER_CLAIM_AFTER", c.ClaimAfter}, {"RECONCILER_LEASE_AFTER", c.LeaseAfter},
	} {
		if v.value < 0 {
			errs = append(errs, fmt.Errorf("%s: want a duration of zero or more, such as 15m", v.name))
		}
	}
	errs = append(errs, c.validateAudit()...)
	return errors.Join(append(errs, c.validateIngestAdmin()...)...)
}

// PSPAuditEnabled reports whether runs audit the PSPs: unless
// RECONCILER_PSP_AUDIT=off.
func (c Config) PSPAuditEnabled() bool { return c.PSPAudit != AuditOff }

// validateIngestAdmin checks how the reconciler reaches ingest's admin API,
// which the sweep needs, and the PSP audit's settings when it is on.
func (c Config) validateIngestAdmin() []error {
	var errs []error
	if u, err := url.Parse(c.IngestAdminURL); c.IngestAdminURL == "" || err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		errs = append(errs, errors.New("RECONCILER_INGEST_ADMIN_URL: want ingest's admin address as an http(s) URL, such as http://ingest:9090 (required: the sweep asks ingest there to announce a missing document's event again)"))
	}
	if c.IngestAdminToken == "" {
		errs = append(errs, errors.New("RECONCILER_INGEST_ADMIN_TOKEN: want ingest's ADMIN_TOKEN (required with RECONCILER_INGEST_ADMIN_URL)"))
	}
	if c.PSPAuditTimeout <= 0 {
		errs = append(errs, errors.New("RECONCILER_PSP_AUDIT_TIMEOUT: want a positive duration such as 1m (it bounds every call to ingest's admin API)"))
	}
	if c.PSPAudit != "" && c.PSPAudit != AuditOn && c.PSPAudit != AuditOff {
		errs = append(errs, fmt.Errorf("RECONCILER_PSP_AUDIT: want on, off or empty (on), got %q", c.PSPAudit))
	}
	if !c.PSPAuditEnabled() {
		return errs
	}
	if c.PSPAuditSettle < 0 || c.PSPAuditWindow <= c.PSPAuditSettle || c.PSPAuditWindow-c.PSPAuditSettle > 31*24*time.Hour {
		errs = append(errs, errors.New("RECONCILER_PSP_AUDIT_WINDOW/RECONCILER_PSP_AUDIT_SETTLE: want 0 <= settle < window, at most 31 days apart"))
	}
	return errs
}

// Retired names the retired variables that are set: they do nothing.
func (c Config) Retired() []string {
	var out []string
	if c.RetiredSigningKey != "" {
		out = append(out, "RECONCILER_SIGNING_KEY")
	}
	if c.RetiredBillingQueue != "" {
		out = append(out, "RECONCILER_BILLING_QUEUE")
	}
	return out
}

// AuditEnabled reports whether runs audit the provider: RECONCILER_AUDIT=on,
// or unset with INVOICY_BASE_URL set.
func (c Config) AuditEnabled() bool {
	return c.Audit == AuditOn || (c.Audit == "" && c.Settings.Named())
}

// validateAudit checks the audit's settings, and the provider's only when
// the audit is on.
func (c Config) validateAudit() []error {
	if c.Audit != "" && c.Audit != AuditOn && c.Audit != AuditOff {
		return []error{fmt.Errorf("RECONCILER_AUDIT: want on, off or empty (on when INVOICY_BASE_URL is set), got %q", c.Audit)}
	}
	if !c.AuditEnabled() {
		return nil
	}
	var errs []error
	if err := c.Settings.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("the provider audit is on (RECONCILER_AUDIT) and needs its InvoiCy branch: %w", err))
	}
	if c.AuditDays < 1 || c.AuditDays > 31 {
		errs = append(errs, fmt.Errorf("RECONCILER_AUDIT_DAYS: want 1 to 31, got %d", c.AuditDays))
	}
	if c.AuditCurrentEvery < 0 || c.AuditCurrentEvery > 24*time.Hour {
		errs = append(errs, errors.New("RECONCILER_AUDIT_CURRENT_EVERY: want 0 to 24h (how often today is listed)"))
	}
	if c.AuditPastEvery < 0 || (c.AuditDays > 1 && c.AuditPastEvery >= time.Duration(c.AuditDays-1)*24*time.Hour) {
		errs = append(errs, errors.New("RECONCILER_AUDIT_PAST_EVERY: want 0 or more and under RECONCILER_AUDIT_DAYS-1 days, so every earlier day is listed again while the audit covers it"))
	}
	if c.AuditRate < 0 {
		errs = append(errs, errors.New("RECONCILER_AUDIT_RATE: want 0 (no pacing) or more documents a second"))
	}
	if c.ProviderTimeout <= 0 {
		errs = append(errs, errors.New("RECONCILER_PROVIDER_TIMEOUT: want a positive duration such as 15s"))
	}
	if _, err := c.statusMap(); err != nil {
		errs = append(errs, fmt.Errorf("RECONCILER_PROVIDER_STATUS_MAP: %w", err))
	}
	return errs
}

// statusMap is RECONCILER_PROVIDER_STATUS_MAP, or nil for the adapter's default.
func (c Config) statusMap() (map[string]fiscal.Status, error) {
	if c.ProviderStatusMap == "" {
		return nil, nil
	}
	return fiscal.ParseStatusMap(c.ProviderStatusMap)
}

// IngestDSN is the connection string for reading the ingest schema.
func (c Config) IngestDSN() string { return orDefault(c.IngestDatabaseURL, c.DatabaseURL) }

// InvoicerDSN is the connection string for reading the invoicer schema.
func (c Config) InvoicerDSN() string { return orDefault(c.InvoicerDatabaseURL, c.DatabaseURL) }

// RelayDSN is the connection string for reading the relay schema.
func (c Config) RelayDSN() string { return orDefault(c.RelayDatabaseURL, c.DatabaseURL) }

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// readOnly makes every transaction on a pool read-only, so the reconciler
// cannot write another service's tables even through a privileged role.
var readOnly = pg.WithSetting("default_transaction_read_only", "on")

// readers are the options of the pools to the other services' schemas:
// read-only, and each statement planned for its own arguments. The
// reconciler pages through them by ranges its arguments set; a generic
// plan, which PostgreSQL keeps for a prepared statement once it looks no
// dearer, cannot see how narrow a range is: the audit's read of the
// documents changed since its last run then intersected them with every
// document of the period, reading a whole day's index for each page of
// 500 (docs/reconciler-audit.md).
var readers = []pg.Option{readOnly, pg.WithSetting("plan_cache_mode", "force_custom_plan")}
