package app

import (
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/services/ingest/internal/psp/dlocal"
	"github.com/onceflow/onceflow/services/ingest/internal/psp/mercadopago"
	"github.com/onceflow/onceflow/services/ingest/internal/psp/stripe"
)

// Config is ingest's configuration, read from the environment. Its own
// settings carry the INGEST_ prefix; the names they had before are read for
// one release (with a warning naming the new one).
type Config struct {
	config.Common
	DLocalBaseURL   string `env:"DLOCAL_BASE_URL" envDefault:"http://127.0.0.1:8091"`
	DLocalLogin     string `env:"DLOCAL_LOGIN"`
	DLocalTransKey  string `env:"DLOCAL_TRANS_KEY"`
	DLocalSecretKey string `env:"DLOCAL_SECRET_KEY"`
	// StripeAPIKey is the Stripe secret key, needed when a source names
	// psp: stripe; StripeBaseURL points the adapter at a sandbox (empty:
	// Stripe's API).
	StripeAPIKey  string `env:"STRIPE_API_KEY"`
	StripeBaseURL string `env:"STRIPE_BASE_URL"`
	// MercadoPagoAccessToken is the Mercado Pago access token, needed when
	// a source names psp: mercadopago; MercadoPagoBaseURL points the
	// adapter at a sandbox (empty: api.mercadopago.com).
	MercadoPagoAccessToken string        `env:"MERCADOPAGO_ACCESS_TOKEN"`
	MercadoPagoBaseURL     string        `env:"MERCADOPAGO_BASE_URL"`
	PSPTimeout             time.Duration `env:"INGEST_PSP_TIMEOUT" renamed:"PSP_TIMEOUT" envDefault:"10s"`
	APIToken               string        `env:"INGEST_API_TOKEN" renamed:"API_TOKEN"`
	// SourcesFile is the YAML file of webhook sources; unset, ingest serves
	// dLocal alone at /webhooks/dlocal.
	SourcesFile string `env:"INGEST_WEBHOOK_SOURCES_FILE" renamed:"WEBHOOK_SOURCES_FILE"`
	// WebhookMaxInFlight bounds the webhook deliveries read and recorded at
	// once, across sources; beyond it a delivery waits for a slot
	// (WebhookAdmissionWait), its body unread, then is answered 503 with
	// Retry-After. Each holds up to its source's
	// max_body_bytes (1 MiB by default): 64 × 1 MiB bounds bodies to 64 MiB.
	WebhookMaxInFlight int `env:"INGEST_WEBHOOK_MAX_IN_FLIGHT" envDefault:"64"`

	// WebhookAdmissionWait is how long a delivery that finds the intake
	// full waits for a slot before it is refused 503; at most
	// webhook.WaitingPerSlot × WebhookMaxInFlight wait at once, and the
	// rest are refused at once. Zero refuses at once.
	WebhookAdmissionWait time.Duration `env:"INGEST_WEBHOOK_ADMISSION_WAIT" envDefault:"500ms"`

	Workers    int           `env:"INGEST_APPLY_WORKERS" renamed:"APPLY_WORKERS" envDefault:"8"`
	ApplyBatch int           `env:"INGEST_APPLY_BATCH" renamed:"APPLY_BATCH" envDefault:"20"`
	ApplyLease time.Duration `env:"INGEST_APPLY_LEASE" renamed:"APPLY_LEASE" envDefault:"60s"`
	ApplyPoll  time.Duration `env:"INGEST_APPLY_POLL_INTERVAL" renamed:"APPLY_POLL_INTERVAL" envDefault:"1s"`
	// ApplyLinger is how long the apply worker waits after a wake-up
	// before it claims, so receipts arriving meanwhile share the claim and
	// its transaction.
	ApplyLinger      time.Duration `env:"INGEST_APPLY_LINGER" envDefault:"50ms"`
	ApplyMaxAttempts int           `env:"INGEST_APPLY_MAX_ATTEMPTS" renamed:"APPLY_MAX_ATTEMPTS" envDefault:"20"`
	ApplyBackoffBase time.Duration `env:"INGEST_APPLY_BACKOFF_BASE" renamed:"APPLY_BACKOFF_BASE" envDefault:"1s"`
	ApplyBackoffCap  time.Duration `env:"INGEST_APPLY_BACKOFF_CAP" renamed:"APPLY_BACKOFF_CAP" envDefault:"10m"`
	// The status poller searches the PSP for the payments of each order
	// (and re-fetches its known payments and registered refunds that have
	// no final state) INGEST_POLL_AFTER after they were registered, then
	// INGEST_POLL_EVERY later (an order: the period doubled after each
	// poll, up to INGEST_POLL_EVERY_MAX; a refund: every
	// INGEST_POLL_EVERY), until INGEST_POLL_GIVE_UP; it looks every
	// INGEST_POLL_INTERVAL, at up to INGEST_POLL_BATCH orders and as many
	// refunds.
	PollAfter    time.Duration `env:"INGEST_POLL_AFTER" renamed:"POLL_AFTER" envDefault:"10m"`
	PollEvery    time.Duration `env:"INGEST_POLL_EVERY" renamed:"POLL_EVERY" envDefault:"5m"`
	PollEveryMax time.Duration `env:"INGEST_POLL_EVERY_MAX" envDefault:"6h"`
	PollGiveUp   time.Duration `env:"INGEST_POLL_GIVE_UP" renamed:"POLL_GIVE_UP" envDefault:"72h"`
	// PollPaidGiveUp is INGEST_POLL_GIVE_UP for an order that has a PAID
	// payment: how long a second payment on it is searched for (up to
	// INGEST_POLL_AFTER: never; the PSP audit finds it).
	PollPaidGiveUp time.Duration `env:"INGEST_POLL_PAID_GIVE_UP" envDefault:"1h"`
	// PollRecurringEvery is how often a recurring order older than
	// INGEST_POLL_GIVE_UP is searched again (a subscription's later
	// period), while one of its payments was recorded within
	// INGEST_POLL_RECURRING_GIVE_UP.
	PollRecurringEvery  time.Duration `env:"INGEST_POLL_RECURRING_EVERY" envDefault:"6h"`
	PollRecurringGiveUp time.Duration `env:"INGEST_POLL_RECURRING_GIVE_UP" envDefault:"9600h"`
	PollInterval        time.Duration `env:"INGEST_POLL_INTERVAL" renamed:"POLL_INTERVAL" envDefault:"30s"`
	PollBatch           int           `env:"INGEST_POLL_BATCH" renamed:"POLL_BATCH" envDefault:"50"`
	// PollConcurrency is how many of a look's orders and refunds are polled
	// at once.
	PollConcurrency int `env:"INGEST_POLL_CONCURRENCY" envDefault:"4"`
	// PollRoundTimeout bounds one poller round's PSP calls.
	PollRoundTimeout time.Duration `env:"INGEST_POLL_ROUND_TIMEOUT" envDefault:"1m"`
	// Finished receipts are deleted INGEST_RECEIPT_RETENTION after they
	// arrived (use 2160h, 90 days, when replaying by hand); idempotency keys
	// after INGEST_IDEMPOTENCY_RETENTION. Both in batches of
	// INGEST_PRUNE_BATCH every INGEST_PRUNE_INTERVAL.
	ReceiptRetention     time.Duration `env:"INGEST_RECEIPT_RETENTION" renamed:"RECEIPT_RETENTION" envDefault:"168h"`
	IdempotencyRetention time.Duration `env:"INGEST_IDEMPOTENCY_RETENTION" renamed:"IDEMPOTENCY_RETENTION" envDefault:"24h"`
	PruneInterval        time.Duration `env:"INGEST_PRUNE_INTERVAL" renamed:"PRUNE_INTERVAL" envDefault:"1m"`
	PruneBatch           int           `env:"INGEST_PRUNE_BATCH" renamed:"PRUNE_BATCH" envDefault:"500"`
	// NotificationsQueue is the invoicer's notifications queue (a name or
	// URL), which ingest consumes, unless ConsumeNotifications is false,
	// into its documents table and, when INGEST_MERCHANT_WEBHOOK_URL is
	// set, into merchant deliveries (docs/notifications.md).
	ConsumeNotifications bool          `env:"INGEST_CONSUME_NOTIFICATIONS" envDefault:"true"`
	NotificationsQueue   string        `env:"INGEST_NOTIFICATIONS_QUEUE" envDefault:"onceflow-notifications"`
	NotificationsWait    time.Duration `env:"INGEST_NOTIFICATIONS_WAIT" envDefault:"10s"`
	// NotificationsKeys are the relay's keys a notification must be signed
	// with (id:secret,...; package msgauth, docs/security.md), and
	// NotificationsUnsigned the rollout mode, reject (the default) or
	// accept, that applies unsigned ones, counted, while the relay starts
	// signing.
	NotificationsKeys     string `env:"INGEST_NOTIFICATIONS_KEYS"`
	NotificationsUnsigned string `env:"INGEST_NOTIFICATIONS_UNSIGNED" envDefault:"reject"`
	// MerchantWebhookURL receives every document.authorized notification,
	// signed with Standard Webhooks under MerchantWebhookSecret (a base64
	// "whsec_" secret); unset, nothing is sent. A POST waits up to
	// INGEST_MERCHANT_WEBHOOK_TIMEOUT; a failed one is retried with backoff
	// from INGEST_MERCHANT_WEBHOOK_BACKOFF_BASE doubling up to
	// INGEST_MERCHANT_WEBHOOK_BACKOFF_CAP and parked after
	// INGEST_MERCHANT_WEBHOOK_MAX_ATTEMPTS attempts.
	MerchantWebhookURL         string        `env:"INGEST_MERCHANT_WEBHOOK_URL"`
	MerchantWebhookSecret      string        `env:"INGEST_MERCHANT_WEBHOOK_SECRET"`
	MerchantWebhookTimeout     time.Duration `env:"INGEST_MERCHANT_WEBHOOK_TIMEOUT" envDefault:"15s"`
	MerchantWebhookMaxAttempts int           `env:"INGEST_MERCHANT_WEBHOOK_MAX_ATTEMPTS" envDefault:"15"`
	MerchantWebhookBackoffBase time.Duration `env:"INGEST_MERCHANT_WEBHOOK_BACKOFF_BASE" envDefault:"30s"`
	MerchantWebhookBackoffCap  time.Duration `env:"INGEST_MERCHANT_WEBHOOK_BACKOFF_CAP" envDefault:"6h"`
	MerchantWebhookParallel    int           `env:"INGEST_MERCHANT_WEBHOOK_PARALLEL" envDefault:"8"`
	MerchantWebhookPoll        time.Duration `env:"INGEST_MERCHANT_WEBHOOK_POLL_INTERVAL" envDefault:"1s"`
	// NotificationRetention is how long delivered notifications and their
	// attempt logs are kept (pruned with the receipts).
	NotificationRetention time.Duration `env:"INGEST_NOTIFICATION_RETENTION" envDefault:"720h"`
	// TLS is served when both files are set.
	TLSCertFile string `env:"TLS_CERT_FILE"`
	TLSKeyFile  string `env:"TLS_KEY_FILE"`
	// Getenv is the environment the config was read from (config.LoadFrom
	// sets it): the sources file names its secrets as env:NAME. A Config
	// built by hand must set it.
	Getenv config.Getenv `env:"-"`
}

// Validate checks the values Load cannot; each message names the variable.
func (c Config) Validate() error {
	if err := c.Common.Validate(); err != nil {
		return err
	}
	checks := []struct {
		bad bool
		msg string
	}{
		{c.Workers < 1, "INGEST_APPLY_WORKERS: want at least 1"},
		{c.WebhookMaxInFlight < 1, "INGEST_WEBHOOK_MAX_IN_FLIGHT: want at least 1"},
		{c.WebhookAdmissionWait < 0 || c.WebhookAdmissionWait > 10*time.Second, "INGEST_WEBHOOK_ADMISSION_WAIT: want a duration from 0 to 10s (a sender waits that long for an answer)"},
		{c.ApplyBatch < 1, "INGEST_APPLY_BATCH: want at least 1"},
		{c.ApplyLease <= 0, "INGEST_APPLY_LEASE: want a positive duration"},
		{c.ApplyPoll <= 0, "INGEST_APPLY_POLL_INTERVAL: want a positive duration"},
		{c.ApplyLinger < 0 || c.ApplyLinger > time.Second, "INGEST_APPLY_LINGER: want a duration from 0 to 1s (each payment waits that long more)"},
		{c.ApplyMaxAttempts < 1, "INGEST_APPLY_MAX_ATTEMPTS: want at least 1"},
		{c.ApplyBackoffBase <= 0 || c.ApplyBackoffCap < c.ApplyBackoffBase, "INGEST_APPLY_BACKOFF_BASE/INGEST_APPLY_BACKOFF_CAP: want 0 < base <= cap"},
		{c.PollAfter < 0 || c.PollEvery <= 0 || c.PollInterval <= 0,
			"INGEST_POLL_AFTER/INGEST_POLL_EVERY/INGEST_POLL_INTERVAL: want INGEST_POLL_AFTER >= 0 and positive INGEST_POLL_EVERY and INGEST_POLL_INTERVAL"},
		{c.PollEveryMax < c.PollEvery, "INGEST_POLL_EVERY_MAX: want a duration at least INGEST_POLL_EVERY"},
		{c.PollGiveUp <= c.PollAfter, "INGEST_POLL_GIVE_UP: want a duration longer than INGEST_POLL_AFTER"},
		{c.PollPaidGiveUp < 0 || c.PollPaidGiveUp > c.PollGiveUp,
			"INGEST_POLL_PAID_GIVE_UP: want a duration from 0 (a paid order is not searched) to INGEST_POLL_GIVE_UP"},
		{c.PollRecurringEvery <= 0 || c.PollRecurringGiveUp <= 0,
			"INGEST_POLL_RECURRING_EVERY/INGEST_POLL_RECURRING_GIVE_UP: want positive durations"},
		{c.PollBatch < 1, "INGEST_POLL_BATCH: want at least 1"},
		{c.PollConcurrency < 1 || c.PollConcurrency > 64, "INGEST_POLL_CONCURRENCY: want 1 to 64"},
		{c.PollRoundTimeout <= 0 || c.PollRoundTimeout >= c.StallTimeout, "INGEST_POLL_ROUND_TIMEOUT: want a positive duration shorter than LOOP_STALL_TIMEOUT"},
		{c.ReceiptRetention < 24*time.Hour, "INGEST_RECEIPT_RETENTION: want at least 24h (168h by default, 2160h with manual replays)"},
		{c.IdempotencyRetention < time.Hour, "INGEST_IDEMPOTENCY_RETENTION: want at least 1h"},
		{c.PruneInterval <= 0 || c.PruneBatch < 1, "INGEST_PRUNE_INTERVAL/INGEST_PRUNE_BATCH: want a positive interval and batch"},
		{(c.TLSCertFile == "") != (c.TLSKeyFile == ""), "TLS_CERT_FILE/TLS_KEY_FILE: set both to serve HTTPS, or neither"},
		{c.NotificationsWait < time.Second || c.NotificationsWait > 20*time.Second, "INGEST_NOTIFICATIONS_WAIT: want 1s to 20s (SQS long polling)"},
		{c.MerchantWebhookURL != "" && !webURL(c.MerchantWebhookURL), "INGEST_MERCHANT_WEBHOOK_URL: want an http:// or https:// URL"},
		{c.MerchantWebhookURL != "" && !c.ConsumeNotifications, "INGEST_CONSUME_NOTIFICATIONS: want true when INGEST_MERCHANT_WEBHOOK_URL is set (deliveries come from the notifications)"},
		{c.MerchantWebhookURL != "" && !whsec(c.MerchantWebhookSecret), "INGEST_MERCHANT_WEBHOOK_SECRET: want a base64 whsec_ secret of at least 24 bytes when INGEST_MERCHANT_WEBHOOK_URL is set"},
		{c.MerchantWebhookTimeout <= 0, "INGEST_MERCHANT_WEBHOOK_TIMEOUT: want a positive duration"},
		{c.MerchantWebhookMaxAttempts < 1, "INGEST_MERCHANT_WEBHOOK_MAX_ATTEMPTS: want at least 1"},
		{c.MerchantWebhookBackoffBase <= 0 || c.MerchantWebhookBackoffCap < c.MerchantWebhookBackoffBase,
			"INGEST_MERCHANT_WEBHOOK_BACKOFF_BASE/INGEST_MERCHANT_WEBHOOK_BACKOFF_CAP: want 0 < base <= cap"},
		{c.MerchantWebhookParallel < 1, "INGEST_MERCHANT_WEBHOOK_PARALLEL: want at least 1"},
		{c.MerchantWebhookPoll <= 0, "INGEST_MERCHANT_WEBHOOK_POLL_INTERVAL: want a positive duration"},
		{c.NotificationRetention < 24*time.Hour, "INGEST_NOTIFICATION_RETENTION: want at least 24h (720h by default)"},
	}
	for _, ch := range checks {
		if ch.bad {
			return errors.New(ch.msg)
		}
	}
	if c.ConsumeNotifications {
		return c.notificationsTrust().Validate()
	}
	return nil
}

// notificationsTrust is what a notification must be signed with.
func (c Config) notificationsTrust() msgauth.Setting {
	return msgauth.Setting{KeysVar: "INGEST_NOTIFICATIONS_KEYS", Keys: c.NotificationsKeys,
		ModeVar: "INGEST_NOTIFICATIONS_UNSIGNED", Mode: c.NotificationsUnsigned}
}

// ValidatePSPs checks the credentials of the PSPs the webhook sources name
// (scopes is sources.PSPScopes' answer): a PSP no source names needs none.
func (c Config) ValidatePSPs(scopes map[string]string) error {
	named := func(name string) bool { _, ok := scopes[name]; return ok }
	checks := []struct {
		bad bool
		msg string
	}{
		{named(dlocal.Name) && c.DLocalLogin == "", "DLOCAL_LOGIN: want the merchant's dLocal login (a webhook source names psp: dlocal)"},
		{named(dlocal.Name) && c.DLocalTransKey == "", "DLOCAL_TRANS_KEY: want the merchant's dLocal trans key (a webhook source names psp: dlocal)"},
		{named(dlocal.Name) && c.DLocalSecretKey == "", "DLOCAL_SECRET_KEY: want the merchant's dLocal secret key, which signs API requests (a webhook source names psp: dlocal)"},
		{named(stripe.Name) && c.StripeAPIKey == "", "STRIPE_API_KEY: want the Stripe secret key (a webhook source names psp: stripe)"},
		{named(mercadopago.Name) && c.MercadoPagoAccessToken == "", "MERCADOPAGO_ACCESS_TOKEN: want the Mercado Pago access token (a webhook source names psp: mercadopago)"},
	}
	for _, ch := range checks {
		if ch.bad {
			return errors.New(ch.msg)
		}
	}
	return nil
}

// webURL reports whether s is an absolute http or https URL with a host.
func webURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// whsec reports whether s is a Standard Webhooks secret: "whsec_" and at
// least 24 bytes, base64-encoded.
func whsec(s string) bool {
	raw, ok := strings.CutPrefix(s, "whsec_")
	b, err := base64.StdEncoding.DecodeString(raw)
	return ok && err == nil && len(b) >= 24
}
