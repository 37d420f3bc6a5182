package app

import (
	"errors"
	"time"

	"github.com/onceflow/onceflow/pkg/config"
)

// Config is ingest's configuration, read from the environment.
type Config struct {
	config.Common
	DLocalBaseURL   string        `env:"DLOCAL_BASE_URL" envDefault:"http://127.0.0.1:8091"`
	DLocalLogin     string        `env:"DLOCAL_LOGIN"`
	DLocalTransKey  string        `env:"DLOCAL_TRANS_KEY"`
	DLocalSecretKey string        `env:"DLOCAL_SECRET_KEY"`
	PSPTimeout      time.Duration `env:"PSP_TIMEOUT" envDefault:"10s"`
	APIToken        string        `env:"API_TOKEN"`
	// SourcesFile is the YAML file of webhook sources; unset, ingest serves
	// dLocal alone at /webhooks/dlocal.
	SourcesFile      string        `env:"WEBHOOK_SOURCES_FILE"`
	Workers          int           `env:"APPLY_WORKERS" envDefault:"8"`
	ApplyBatch       int           `env:"APPLY_BATCH" envDefault:"20"`
	ApplyLease       time.Duration `env:"APPLY_LEASE" envDefault:"60s"`
	ApplyPoll        time.Duration `env:"APPLY_POLL_INTERVAL" envDefault:"1s"`
	ApplyMaxAttempts int           `env:"APPLY_MAX_ATTEMPTS" envDefault:"20"`
	ApplyBackoffBase time.Duration `env:"APPLY_BACKOFF_BASE" envDefault:"1s"`
	ApplyBackoffCap  time.Duration `env:"APPLY_BACKOFF_CAP" envDefault:"10m"`
	// The status poller re-fetches payments (of orders with a PSP payment
	// id) and registered refunds that have no final state POLL_AFTER after
	// they were registered, every POLL_EVERY, until POLL_GIVE_UP; it looks
	// every POLL_INTERVAL, at up to POLL_BATCH payments and as many refunds.
	PollAfter    time.Duration `env:"POLL_AFTER" envDefault:"10m"`
	PollEvery    time.Duration `env:"POLL_EVERY" envDefault:"5m"`
	PollGiveUp   time.Duration `env:"POLL_GIVE_UP" envDefault:"72h"`
	PollInterval time.Duration `env:"POLL_INTERVAL" envDefault:"30s"`
	PollBatch    int           `env:"POLL_BATCH" envDefault:"50"`
	// Finished receipts are deleted RECEIPT_RETENTION after they arrived
	// (use 2160h, 90 days, when replaying by hand); idempotency keys after
	// IDEMPOTENCY_RETENTION. Both in batches of PRUNE_BATCH every
	// PRUNE_INTERVAL.
	ReceiptRetention     time.Duration `env:"RECEIPT_RETENTION" envDefault:"168h"`
	IdempotencyRetention time.Duration `env:"IDEMPOTENCY_RETENTION" envDefault:"24h"`
	PruneInterval        time.Duration `env:"PRUNE_INTERVAL" envDefault:"1m"`
	PruneBatch           int           `env:"PRUNE_BATCH" envDefault:"500"`
	// TLS is served when both files are set.
	TLSCertFile string `env:"TLS_CERT_FILE"`
	TLSKeyFile  string `env:"TLS_KEY_FILE"`
}

// Validate checks the values Load cannot.
func (c Config) Validate() error {
	if err := c.Common.Validate(); err != nil {
		return err
	}
	checks := []struct {
		bad bool
		msg string
	}{
		{c.DLocalLogin == "", "DLOCAL_LOGIN: want the merchant's dLocal login"},
		{c.DLocalTransKey == "", "DLOCAL_TRANS_KEY: want the merchant's dLocal trans key"},
		{c.DLocalSecretKey == "", "DLOCAL_SECRET_KEY: want the merchant's dLocal secret key (it signs API requests)"},
		{c.Workers < 1, "APPLY_WORKERS: want at least 1"},
		{c.ApplyBatch < 1, "APPLY_BATCH: want at least 1"},
		{c.ApplyLease <= 0, "APPLY_LEASE: want a positive duration"},
		{c.ApplyPoll <= 0, "APPLY_POLL_INTERVAL: want a positive duration"},
		{c.ApplyMaxAttempts < 1, "APPLY_MAX_ATTEMPTS: want at least 1"},
		{c.ApplyBackoffBase <= 0 || c.ApplyBackoffCap < c.ApplyBackoffBase, "APPLY_BACKOFF_BASE/APPLY_BACKOFF_CAP: want 0 < base <= cap"},
		{c.PollAfter < 0 || c.PollEvery <= 0 || c.PollInterval <= 0, "POLL_AFTER/POLL_EVERY/POLL_INTERVAL: want POLL_AFTER >= 0 and positive POLL_EVERY and POLL_INTERVAL"},
		{c.PollGiveUp <= c.PollAfter, "POLL_GIVE_UP: want a duration longer than POLL_AFTER"},
		{c.PollBatch < 1, "POLL_BATCH: want at least 1"},
		{c.ReceiptRetention < 24*time.Hour, "RECEIPT_RETENTION: want at least 24h (168h by default, 2160h with manual replays)"},
		{c.IdempotencyRetention < time.Hour, "IDEMPOTENCY_RETENTION: want at least 1h"},
		{c.PruneInterval <= 0 || c.PruneBatch < 1, "PRUNE_INTERVAL/PRUNE_BATCH: want a positive interval and batch"},
		{(c.TLSCertFile == "") != (c.TLSKeyFile == ""), "TLS_CERT_FILE/TLS_KEY_FILE: set both to serve HTTPS, or neither"},
	}
	for _, ch := range checks {
		if ch.bad {
			return errors.New(ch.msg)
		}
	}
	return nil
}
