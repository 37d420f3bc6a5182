package app

import (
	"errors"
	"time"

	"github.com/onceflow/onceflow/pkg/config"
)

// Config is the invoicer's configuration, read from the environment.
type Config struct {
	config.Common
	BillingQueue     string        `env:"BILLING_QUEUE" envDefault:"onceflow-billing"`
	ConsumerWait     time.Duration `env:"CONSUMER_WAIT" envDefault:"20s"`
	Consumers        int           `env:"CONSUMERS" envDefault:"1"`
	InvoiCyBaseURL   string        `env:"INVOICY_BASE_URL" envDefault:"http://127.0.0.1:8092/InvoiCy"`
	InvoiCyEmpCodigo string        `env:"INVOICY_EMP_CODIGO"`
	InvoiCyEmpPK     string        `env:"INVOICY_EMP_PK"`
	InvoiCyAccessKey string        `env:"INVOICY_ACCESS_KEY"`
	InvoiCyTimeout   time.Duration `env:"INVOICY_TIMEOUT" envDefault:"15s"`
	EmitWorkers      int           `env:"EMIT_WORKERS" envDefault:"2"`
	EmitBatch        int           `env:"EMIT_BATCH" envDefault:"10"`
	EmitLease        time.Duration `env:"EMIT_LEASE" envDefault:"60s"`
	EmitPoll         time.Duration `env:"EMIT_POLL_INTERVAL" envDefault:"500ms"`
	EmitSettle       time.Duration `env:"EMIT_SETTLE" envDefault:"2m"`
	EmitRetryBase    time.Duration `env:"EMIT_RETRY_BASE" envDefault:"5s"`
	EmitRetryCap     time.Duration `env:"EMIT_RETRY_CAP" envDefault:"10m"`
	DGIPollBase      time.Duration `env:"DGI_POLL_BASE" envDefault:"60s"`
	DGIPollCap       time.Duration `env:"DGI_POLL_CAP" envDefault:"1h"`
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
		{c.BillingQueue == "", "BILLING_QUEUE: want a queue name or URL"},
		{c.ConsumerWait < 0 || c.ConsumerWait > 20*time.Second, "CONSUMER_WAIT: want 0s to 20s"},
		{c.Consumers < 1, "CONSUMERS: want at least 1"},
		{c.EmitWorkers < 1, "EMIT_WORKERS: want at least 1"},
		{c.EmitBatch < 1, "EMIT_BATCH: want at least 1"},
		{c.EmitLease <= c.InvoiCyTimeout*2, "EMIT_LEASE: want more than twice INVOICY_TIMEOUT, so a claim outlives its provider calls"},
		{c.EmitPoll <= 0, "EMIT_POLL_INTERVAL: want a positive duration"},
		{c.EmitSettle < 0, "EMIT_SETTLE: want a duration, 0s or more"},
		{c.EmitRetryBase <= 0 || c.EmitRetryCap < c.EmitRetryBase, "EMIT_RETRY_BASE/EMIT_RETRY_CAP: want 0 < base <= cap"},
		{c.DGIPollBase <= 0 || c.DGIPollCap < c.DGIPollBase, "DGI_POLL_BASE/DGI_POLL_CAP: want 0 < base <= cap"},
	}
	for _, ch := range checks {
		if ch.bad {
			return errors.New(ch.msg)
		}
	}
	return nil
}
