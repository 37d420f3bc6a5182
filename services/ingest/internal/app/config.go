package app

import (
	"errors"
	"time"

	"github.com/onceflow/onceflow/pkg/config"
)

// Config is ingest's configuration, read from the environment.
type Config struct {
	config.Common
	DLocalBaseURL    string        `env:"DLOCAL_BASE_URL" envDefault:"http://127.0.0.1:8091"`
	DLocalLogin      string        `env:"DLOCAL_LOGIN"`
	DLocalTransKey   string        `env:"DLOCAL_TRANS_KEY"`
	DLocalSecretKey  string        `env:"DLOCAL_SECRET_KEY"`
	PSPTimeout       time.Duration `env:"PSP_TIMEOUT" envDefault:"10s"`
	APIToken         string        `env:"API_TOKEN"`
	WebhookMaxBytes  int64         `env:"WEBHOOK_MAX_BYTES" envDefault:"1048576"`
	Workers          int           `env:"APPLY_WORKERS" envDefault:"2"`
	ApplyBatch       int           `env:"APPLY_BATCH" envDefault:"20"`
	ApplyLease       time.Duration `env:"APPLY_LEASE" envDefault:"60s"`
	ApplyPoll        time.Duration `env:"APPLY_POLL_INTERVAL" envDefault:"1s"`
	ApplyMaxAttempts int           `env:"APPLY_MAX_ATTEMPTS" envDefault:"20"`
	ApplyBackoffBase time.Duration `env:"APPLY_BACKOFF_BASE" envDefault:"1s"`
	ApplyBackoffCap  time.Duration `env:"APPLY_BACKOFF_CAP" envDefault:"10m"`
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
		{c.DLocalSecretKey == "", "DLOCAL_SECRET_KEY: want the merchant's dLocal secret key"},
		{c.WebhookMaxBytes <= 0, "WEBHOOK_MAX_BYTES: want a positive byte count"},
		{c.Workers < 1, "APPLY_WORKERS: want at least 1"},
		{c.ApplyBatch < 1, "APPLY_BATCH: want at least 1"},
		{c.ApplyLease <= 0, "APPLY_LEASE: want a positive duration"},
		{c.ApplyPoll <= 0, "APPLY_POLL_INTERVAL: want a positive duration"},
		{c.ApplyMaxAttempts < 1, "APPLY_MAX_ATTEMPTS: want at least 1"},
		{c.ApplyBackoffBase <= 0 || c.ApplyBackoffCap < c.ApplyBackoffBase, "APPLY_BACKOFF_BASE/APPLY_BACKOFF_CAP: want 0 < base <= cap"},
	}
	for _, ch := range checks {
		if ch.bad {
			return errors.New(ch.msg)
		}
	}
	return nil
}
