package app

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/fiscal/vat"
	"github.com/onceflow/onceflow/provider/invoicy"
	"github.com/onceflow/onceflow/provider/keyedjson"
)

// Provider adapters (INVOICER_PROVIDER).
const (
	// ProviderInvoiCy speaks InvoiCy's SOAP services (docs/wire-invoicy.md).
	ProviderInvoiCy = "invoicy"
	// ProviderKeyed speaks the generic JSON API with Idempotency-Key and a
	// GET by key (package keyed).
	ProviderKeyed = "keyed"
)

// Provider modes (INVOICER_PROVIDER_MODE).
const (
	// ModeLookup: the provider answers a look-up by reference; ambiguous
	// sends are settled by looking up before any resend.
	ModeLookup = "lookup"
	// ModeBlind: the provider has neither look-up nor idempotency; an
	// ambiguous send parks the document in needs_attention.
	ModeBlind = "blind"
)

// Config is the invoicer's configuration, read from the environment.
// services/invoicer/README.md lists the invoicer's own settings with their
// defaults; the shared ones are in the top README. The invoicer's own
// variables carry its prefix, INVOICER_; each is still read under its old
// name (renamed) for one release.
type Config struct {
	config.Common
	// Settings name the InvoiCy branch (INVOICY_*), as the reconciler names
	// it; required when INVOICER_PROVIDER is invoicy.
	invoicy.Settings
	BillingQueue       string        `env:"INVOICER_BILLING_QUEUE" renamed:"BILLING_QUEUE" envDefault:"onceflow-billing"`
	ProviderQueue      string        `env:"INVOICER_PROVIDER_EVENTS_QUEUE" renamed:"PROVIDER_EVENTS_QUEUE" envDefault:"onceflow-provider-events"`
	ConsumerWait       time.Duration `env:"INVOICER_CONSUMER_WAIT" renamed:"CONSUMER_WAIT" envDefault:"20s"`
	ConsumerVisibility time.Duration `env:"INVOICER_CONSUMER_VISIBILITY" renamed:"CONSUMER_VISIBILITY" envDefault:"30s"`
	Consumers          int           `env:"INVOICER_CONSUMERS" renamed:"CONSUMERS" envDefault:"4"`
	Provider           string        `env:"INVOICER_PROVIDER" renamed:"PROVIDER" envDefault:"invoicy"`
	ProviderMode       string        `env:"INVOICER_PROVIDER_MODE" renamed:"PROVIDER_MODE" envDefault:"lookup"`
	ProviderTimeout    time.Duration `env:"INVOICER_PROVIDER_TIMEOUT" renamed:"PROVIDER_TIMEOUT" envDefault:"15s"`
	ProviderRate       float64       `env:"INVOICER_PROVIDER_RATE_LIMIT" renamed:"PROVIDER_RATE_LIMIT" envDefault:"10"`
	ProviderBurst      int           `env:"INVOICER_PROVIDER_RATE_BURST" renamed:"PROVIDER_RATE_BURST" envDefault:"5"`
	ProviderStatusMap  string        `env:"INVOICER_PROVIDER_STATUS_MAP" renamed:"PROVIDER_STATUS_MAP"`
	KeyedBaseURL       string        `env:"KEYED_BASE_URL" envDefault:"http://127.0.0.1:8092/api"`
	KeyedToken         string        `env:"KEYED_TOKEN"`
	EmitWorkers        int           `env:"INVOICER_EMIT_WORKERS" renamed:"EMIT_WORKERS" envDefault:"32"`
	EmitBatch          int           `env:"INVOICER_EMIT_BATCH" renamed:"EMIT_BATCH" envDefault:"10"`
	EmitLease          time.Duration `env:"INVOICER_EMIT_LEASE" renamed:"EMIT_LEASE" envDefault:"60s"`
	EmitPoll           time.Duration `env:"INVOICER_EMIT_POLL_INTERVAL" renamed:"EMIT_POLL_INTERVAL" envDefault:"500ms"`
	// EmitLinger is how long the emission loop waits after a wake-up
	// before it claims, so documents recorded meanwhile share the claim.
	EmitLinger time.Duration `env:"INVOICER_EMIT_LINGER" envDefault:"50ms"`
	// MetricsEvery is how long the document metrics' answer is reused:
	// scrapes within it cost no query.
	MetricsEvery  time.Duration `env:"INVOICER_METRICS_EVERY" envDefault:"15s"`
	EmitSettle    time.Duration `env:"INVOICER_EMIT_SETTLE" renamed:"EMIT_SETTLE" envDefault:"2m"`
	EmitRetryBase time.Duration `env:"INVOICER_EMIT_RETRY_BASE" renamed:"EMIT_RETRY_BASE" envDefault:"5s"`
	EmitRetryCap  time.Duration `env:"INVOICER_EMIT_RETRY_CAP" renamed:"EMIT_RETRY_CAP" envDefault:"10m"`
	DGIPollBase   time.Duration `env:"INVOICER_DGI_POLL_BASE" renamed:"DGI_POLL_BASE" envDefault:"60s"`
	DGIPollCap    time.Duration `env:"INVOICER_DGI_POLL_CAP" renamed:"DGI_POLL_CAP" envDefault:"1h"`
	SummaryPolls  int           `env:"INVOICER_DGI_SUMMARY_POLLS" renamed:"DGI_SUMMARY_POLLS" envDefault:"48"`
	UIThreshold   int64         `env:"INVOICER_UI_THRESHOLD" renamed:"UI_THRESHOLD" envDefault:"5000"`
	// VATRates are the VAT rates by effective date (vat.ParseSchedule);
	// empty is Uruguay's since 2007, 10 % and 22 %.
	VATRates string `env:"INVOICER_VAT_RATES"`
	// BCUURL is the BCU rates service asked for exchange rates and the UI
	// that invoicer.rates lacks; "off" asks nobody.
	BCUURL string `env:"INVOICER_BCU_URL" envDefault:"https://cotizaciones.bcu.gub.uy/wscotizaciones/servlet/awsbcucotizaciones"`
	// RatesFile is a CSV of code,date,value rows loaded into invoicer.rates
	// at start (replacing the values it names); empty loads nothing.
	RatesFile string `env:"INVOICER_RATES_FILE"`
	// RatesCacheTTL is how long a rate or UI value read for a code and day
	// is kept in memory before it is read again; 0 reads it for every
	// document.
	RatesCacheTTL  time.Duration `env:"INVOICER_RATES_CACHE_TTL" envDefault:"1m"`
	CreditNoteWait time.Duration `env:"INVOICER_CREDIT_NOTE_WAIT" renamed:"CREDIT_NOTE_WAIT" envDefault:"72h"`
	// RefusedCaseAfter: consecutive refusals of a send that open a
	// document_refused case (the send is still retried with backoff).
	RefusedCaseAfter int `env:"INVOICER_REFUSED_CASE_AFTER" envDefault:"5"`
	// AttemptsRetention is how long the attempts of a document in a final
	// status are kept (its last attempt is kept for good); the pruner runs
	// every AttemptsPruneInterval, AttemptsPruneBatch rows per statement.
	AttemptsRetention     time.Duration `env:"INVOICER_ATTEMPTS_RETENTION" envDefault:"2160h"`
	AttemptsPruneInterval time.Duration `env:"INVOICER_ATTEMPTS_PRUNE_INTERVAL" envDefault:"1h"`
	AttemptsPruneBatch    int32         `env:"INVOICER_ATTEMPTS_PRUNE_BATCH" envDefault:"1000"`
	// BillingKeys are the producers' keys a billing message must be signed
	// with (id:secret,...; package msgauth, docs/security.md).
	BillingKeys string `env:"INVOICER_BILLING_KEYS"`
	// BillingUnsigned is reject (the default) or accept: the rollout mode
	// that handles unsigned billing messages, counted, for the release in
	// which the producers start signing.
	BillingUnsigned string `env:"INVOICER_BILLING_UNSIGNED" envDefault:"reject"`
	// ProviderEventsKeys are the producers' keys a provider event must be
	// signed with; ProviderEventsUnsigned is its rollout mode, as for
	// billing messages.
	ProviderEventsKeys     string `env:"INVOICER_PROVIDER_EVENTS_KEYS"`
	ProviderEventsUnsigned string `env:"INVOICER_PROVIDER_EVENTS_UNSIGNED" envDefault:"reject"`
}

// Validate checks the values Load cannot; each error names its variable.
func (c Config) Validate() error {
	if err := c.Common.Validate(); err != nil {
		return err
	}
	checks := []struct {
		bad bool
		msg string
	}{
		{c.BillingQueue == "", "INVOICER_BILLING_QUEUE: want a queue name or URL"},
		{c.ProviderQueue == "", "INVOICER_PROVIDER_EVENTS_QUEUE: want a queue name or URL"},
		{c.ConsumerWait < 0 || c.ConsumerWait > 20*time.Second, "INVOICER_CONSUMER_WAIT: want 0s to 20s"},
		{c.ConsumerVisibility < 2*time.Second || c.ConsumerVisibility > 12*time.Hour, "INVOICER_CONSUMER_VISIBILITY: want 2s to 12h"},
		{c.Consumers < 1, "INVOICER_CONSUMERS: want at least 1"},
		{c.Provider != ProviderInvoiCy && c.Provider != ProviderKeyed, "INVOICER_PROVIDER: want invoicy or keyed"},
		{c.ProviderMode != ModeLookup && c.ProviderMode != ModeBlind, "INVOICER_PROVIDER_MODE: want lookup or blind"},
		{c.ProviderTimeout <= 0, "INVOICER_PROVIDER_TIMEOUT: want a positive duration"},
		{c.ProviderRate < 0 || c.ProviderBurst < 1, "INVOICER_PROVIDER_RATE_LIMIT/INVOICER_PROVIDER_RATE_BURST: want a rate of 0 (no limit) or more and a burst of 1 or more"},
		{c.EmitWorkers < 1, "INVOICER_EMIT_WORKERS: want at least 1"},
		{c.EmitBatch < 1, "INVOICER_EMIT_BATCH: want at least 1"},
		{c.EmitLease <= c.ProviderTimeout*2, "INVOICER_EMIT_LEASE: want more than twice INVOICER_PROVIDER_TIMEOUT, so a claim outlives a look-up and a send"},
		{c.EmitPoll <= 0, "INVOICER_EMIT_POLL_INTERVAL: want a positive duration"},
		{c.EmitLinger < 0 || c.EmitLinger > time.Second, "INVOICER_EMIT_LINGER: want a duration from 0 to 1s (each document waits that long more)"},
		{c.MetricsEvery <= 0, "INVOICER_METRICS_EVERY: want a positive duration such as 15s"},
		{c.EmitSettle < 0, "INVOICER_EMIT_SETTLE: want a duration, 0s or more"},
		{c.EmitRetryBase <= 0 || c.EmitRetryCap < c.EmitRetryBase, "INVOICER_EMIT_RETRY_BASE/INVOICER_EMIT_RETRY_CAP: want 0 < base <= cap"},
		{c.DGIPollBase <= 0 || c.DGIPollCap < c.DGIPollBase, "INVOICER_DGI_POLL_BASE/INVOICER_DGI_POLL_CAP: want 0 < base <= cap"},
		{c.CreditNoteWait <= 0, "INVOICER_CREDIT_NOTE_WAIT: want a positive duration"},
		{c.RefusedCaseAfter < 1, "INVOICER_REFUSED_CASE_AFTER: want an integer >= 1"},
		{c.AttemptsRetention < time.Hour, "INVOICER_ATTEMPTS_RETENTION: want a duration of 1h or more, such as 2160h (90 days)"},
		{c.AttemptsPruneInterval <= 0, "INVOICER_ATTEMPTS_PRUNE_INTERVAL: want a positive duration such as 1h"},
		{c.AttemptsPruneBatch < 1, "INVOICER_ATTEMPTS_PRUNE_BATCH: want a positive number of rows such as 1000"},
	}
	for _, ch := range checks {
		if ch.bad {
			return errors.New(ch.msg)
		}
	}
	if err := c.checkTrust(); err != nil {
		return err
	}
	if _, err := c.statusMap(); err != nil {
		return errors.New("INVOICER_PROVIDER_STATUS_MAP: " + err.Error())
	}
	if _, err := c.summary(); err != nil {
		return errors.New("INVOICER_DGI_SUMMARY_POLLS/INVOICER_UI_THRESHOLD: " + err.Error())
	}
	if _, err := vat.ParseSchedule(c.VATRates); err != nil {
		return errors.New("INVOICER_VAT_RATES: " + err.Error())
	}
	if c.RatesCacheTTL < 0 {
		return errors.New("INVOICER_RATES_CACHE_TTL: want 0 (no cache) or a positive duration such as 1m")
	}
	if u, err := url.Parse(c.BCUURL); c.BCUURL != "off" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return errors.New("INVOICER_BCU_URL: want an http(s) URL, or off")
	}
	if c.Provider == ProviderInvoiCy {
		if err := c.Settings.Validate(); err != nil {
			return fmt.Errorf("INVOICER_PROVIDER=invoicy needs an InvoiCy branch: %w", err)
		}
	}
	return nil
}

// statusMap is the provider's status mapping: INVOICER_PROVIDER_STATUS_MAP,
// or the adapter's default table.
func (c Config) statusMap() (map[string]fiscal.Status, error) {
	switch {
	case c.ProviderStatusMap != "":
		return fiscal.ParseStatusMap(c.ProviderStatusMap)
	case c.Provider == ProviderKeyed:
		return keyedjson.DefaultStatusMap(), nil
	}
	return invoicy.DefaultStatusMap(), nil
}

// EmitSends is how many of a round's documents an emission worker sends at
// once: the whole batch without a provider rate limit. Under one, a call
// that cannot have its turn within INVOICER_PROVIDER_TIMEOUT is refused
// before it is made, so every worker's sends, and one look-up each, are
// kept within the calls the limit allows in one timeout (its burst
// included); at least one.
func (c Config) EmitSends() int {
	if c.ProviderRate == 0 {
		return c.EmitBatch
	}
	calls := int(c.ProviderRate*c.ProviderTimeout.Seconds()) + c.ProviderBurst
	return max(1, min(c.EmitBatch, calls/c.EmitWorkers-1))
}

// summary is the daily-summary rule the settings describe.
func (c Config) summary() (fiscal.DailySummary, error) {
	return fiscal.NewDailySummary(c.SummaryPolls, c.UIThreshold)
}

// checkTrust checks each queue's keys and rollout mode.
func (c Config) checkTrust() error {
	billing, provider := c.trusts()
	for _, q := range []msgauth.Setting{billing, provider} {
		if err := q.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// trusts returns the billing queue's trust setting and the provider events'.
func (c Config) trusts() (billing, provider msgauth.Setting) {
	return msgauth.Setting{KeysVar: "INVOICER_BILLING_KEYS", Keys: c.BillingKeys, ModeVar: "INVOICER_BILLING_UNSIGNED", Mode: c.BillingUnsigned},
		msgauth.Setting{KeysVar: "INVOICER_PROVIDER_EVENTS_KEYS", Keys: c.ProviderEventsKeys, ModeVar: "INVOICER_PROVIDER_EVENTS_UNSIGNED", Mode: c.ProviderEventsUnsigned}
}
