package app

import (
	"fmt"
	"time"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/lease"
	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/services/relay/internal/relay"
)

// Config is the relay's configuration, read from the environment.
type Config struct {
	config.Common
	// Routes maps outboxes to queues by event-type prefix (see
	// relay.ParseRoutes); the default sends ingest's billing and provider
	// events and the invoicer's notifications.
	Routes       string        `env:"RELAY_ROUTES" envDefault:"ingest.outbox=billing.>onceflow-billing,provider.>onceflow-provider-events;invoicer.outbox=notification.>onceflow-notifications"`
	BatchSize    int           `env:"RELAY_BATCH_SIZE" envDefault:"500"`
	MaxAttempts  int           `env:"RELAY_MAX_ATTEMPTS" envDefault:"10"`
	BackoffBase  time.Duration `env:"RELAY_BACKOFF_BASE" envDefault:"1s"`
	BackoffCap   time.Duration `env:"RELAY_BACKOFF_CAP" envDefault:"5m"`
	PollInterval time.Duration `env:"RELAY_POLL_INTERVAL" envDefault:"1s"`
	LeaseTTL     time.Duration `env:"RELAY_LEASE_TTL" envDefault:"15s"`
	// MaxMessageBytes and MaxBatchBytes are SQS's size limits for one
	// message and one SendMessageBatch request: 1 MiB since AWS raised them
	// in 2025; set both to 262144 for endpoints that still enforce 256 KiB.
	MaxMessageBytes int           `env:"RELAY_MAX_MESSAGE_BYTES" envDefault:"1048576"`
	MaxBatchBytes   int           `env:"RELAY_MAX_BATCH_BYTES" envDefault:"1048576"`
	Retention       time.Duration `env:"RELAY_RETENTION" envDefault:"168h"`
	PruneInterval   time.Duration `env:"RELAY_PRUNE_INTERVAL" envDefault:"1m"`
	PruneBatch      int           `env:"RELAY_PRUNE_BATCH" envDefault:"1000"`
	StatsInterval   time.Duration `env:"RELAY_STATS_INTERVAL" envDefault:"15s"`
	// Shards is how many shards each outbox is split into, so that many
	// relays can publish it at once (docs/relay-sharding.md). Relays with
	// different values never publish at once: the later ones wait.
	Shards int `env:"RELAY_SHARDS" envDefault:"1"`
	// Holder identifies this process in the lease table; empty means
	// hostname plus a random suffix, chosen at start.
	Holder string `env:"RELAY_HOLDER"`
	// SigningKey (id:secret, package msgauth) signs every message the relay
	// publishes; the invoicer trusts billing messages only under a key it
	// holds (docs/security.md). Empty publishes unsigned messages.
	SigningKey string `env:"RELAY_SIGNING_KEY"`
}

// Validate checks every setting; the error names the variable at fault and
// what it expects.
func (c Config) Validate() error {
	if err := c.Common.Validate(); err != nil {
		return err
	}
	if _, err := relay.ParseRoutes(c.Routes); err != nil {
		return fmt.Errorf("RELAY_ROUTES: %w", err)
	}
	if c.SigningKey != "" {
		if _, err := msgauth.ParseKey(c.SigningKey); err != nil {
			return fmt.Errorf("RELAY_SIGNING_KEY: %w", err)
		}
	}
	checks := []struct {
		ok   bool
		name string
		want string
	}{
		{c.BatchSize >= 1, "RELAY_BATCH_SIZE", "a positive number of rows such as 500"},
		{c.MaxAttempts >= 1, "RELAY_MAX_ATTEMPTS", "a positive number of attempts such as 10"},
		{c.BackoffBase > 0, "RELAY_BACKOFF_BASE", "a positive duration such as 1s"},
		{c.BackoffCap >= c.BackoffBase, "RELAY_BACKOFF_CAP", "a duration at least RELAY_BACKOFF_BASE, such as 5m"},
		{c.PollInterval > 0, "RELAY_POLL_INTERVAL", "a positive duration such as 1s"},
		{c.LeaseTTL >= 3*time.Millisecond, "RELAY_LEASE_TTL", "a positive duration such as 15s"},
		{c.MaxMessageBytes >= 1024 && c.MaxMessageBytes <= 1048576, "RELAY_MAX_MESSAGE_BYTES", "a size from 1024 to 1048576 bytes (the SQS limit)"},
		{c.MaxBatchBytes >= c.MaxMessageBytes && c.MaxBatchBytes <= 1048576, "RELAY_MAX_BATCH_BYTES", "a size from RELAY_MAX_MESSAGE_BYTES to 1048576 bytes (the SQS limit)"},
		{c.Retention > 0, "RELAY_RETENTION", "a positive duration such as 168h"},
		{c.PruneInterval > 0, "RELAY_PRUNE_INTERVAL", "a positive duration such as 1m"},
		{c.PruneBatch >= 1, "RELAY_PRUNE_BATCH", "a positive number of rows such as 1000"},
		{c.StatsInterval > 0, "RELAY_STATS_INTERVAL", "a positive duration such as 15s"},
		{c.Shards >= 1 && c.Shards <= outbox.SlotCount, "RELAY_SHARDS", fmt.Sprintf("a number of shards from 1 to %d, such as 8", outbox.SlotCount)},
	}
	for _, ch := range checks {
		if !ch.ok {
			return fmt.Errorf("%s: want %s", ch.name, ch.want)
		}
	}
	return nil
}

// settings turns the configuration into the relay's settings, choosing a
// holder when none is configured.
func (c Config) settings() relay.Settings {
	holder := c.Holder
	if holder == "" {
		holder = lease.HolderID("relay")
	}
	var signer *msgauth.Key
	if c.SigningKey != "" {
		k, _ := msgauth.ParseKey(c.SigningKey) // Validate has checked it
		signer = &k
	}
	return relay.Settings{
		Signer:          signer,
		Holder:          holder,
		BatchSize:       c.BatchSize,
		MaxAttempts:     c.MaxAttempts,
		Backoff:         backoff.Policy{Base: c.BackoffBase, Cap: c.BackoffCap},
		PollInterval:    c.PollInterval,
		LeaseTTL:        c.LeaseTTL,
		MaxMessageBytes: c.MaxMessageBytes,
		MaxBatchBytes:   c.MaxBatchBytes,
		Retention:       c.Retention,
		PruneInterval:   c.PruneInterval,
		PruneBatch:      c.PruneBatch,
		StatsInterval:   c.StatsInterval,
		Shards:          c.Shards,
	}
}
