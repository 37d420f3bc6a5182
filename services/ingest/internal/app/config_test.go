package app_test

import (
	"strings"
	"testing"

	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/services/ingest/internal/app"
)

// required are the settings ingest cannot start without when, as without
// a sources file, it takes dLocal payments, and consumes notifications.
var required = map[string]string{"DLOCAL_LOGIN": login, "DLOCAL_TRANS_KEY": transKey, "DLOCAL_SECRET_KEY": secret, "INGEST_NOTIFICATIONS_KEYS": relayKey}

func load(vars map[string]string) (config.Loaded[app.Config], error) {
	all := map[string]string{}
	for _, m := range []map[string]string{required, vars} {
		for k, v := range m {
			all[k] = v
		}
	}
	return config.LoadFrom[app.Config](func(k string) string { return all[k] })
}

// The names settings had before the INGEST_ prefix are read for one
// release, and the new name wins when both are set.
func TestOldNamesAreStillReadAndTheNewOnesWin(t *testing.T) {
	t.Parallel()
	loaded, err := load(map[string]string{"APPLY_WORKERS": "3", "INGEST_APPLY_WORKERS": "5", "POLL_BATCH": "7",
		"API_TOKEN": "old-token", "WEBHOOK_SOURCES_FILE": "/etc/sources.yaml", "STRIPE_SECRET": "whsec_x"})
	if err != nil {
		t.Fatal(err)
	}
	c := loaded.Value
	if c.Workers != 5 {
		t.Errorf("workers %d, want 5: INGEST_APPLY_WORKERS wins over APPLY_WORKERS", c.Workers)
	}
	if c.PollBatch != 7 || c.APIToken != "old-token" || c.SourcesFile != "/etc/sources.yaml" {
		t.Errorf("poll batch %d, API token %q, sources file %q: want the values of the old names", c.PollBatch, c.APIToken, c.SourcesFile)
	}
	want := map[string]string{"POLL_BATCH": "INGEST_POLL_BATCH", "API_TOKEN": "INGEST_API_TOKEN", "WEBHOOK_SOURCES_FILE": "INGEST_WEBHOOK_SOURCES_FILE"}
	if len(loaded.Renamed) != len(want) {
		t.Errorf("renamed %v, want %v", loaded.Renamed, want)
	}
	for old, nu := range want {
		if loaded.Renamed[old] != nu {
			t.Errorf("renamed %v, want %s → %s", loaded.Renamed, old, nu)
		}
	}
	if c.Getenv == nil || c.Getenv("STRIPE_SECRET") != "whsec_x" {
		t.Error("Getenv does not read the environment the config came from (the sources file's env:NAME secrets)")
	}
}

func TestBadSettingsNameTheNewVariable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"APPLY_WORKERS": "0"}, "INGEST_APPLY_WORKERS: want at least 1"},
		{map[string]string{"INGEST_POLL_AFTER": "1h", "POLL_GIVE_UP": "30m"}, "INGEST_POLL_GIVE_UP: want a duration longer than INGEST_POLL_AFTER"},
		{map[string]string{"INGEST_POLL_PAID_GIVE_UP": "-1m"}, "INGEST_POLL_PAID_GIVE_UP: want a duration from 0"},
		{map[string]string{"INGEST_POLL_PAID_GIVE_UP": "100h"}, "INGEST_POLL_PAID_GIVE_UP: want a duration from 0"},
		{map[string]string{"INGEST_POLL_EVERY": "10m", "INGEST_POLL_EVERY_MAX": "5m"}, "INGEST_POLL_EVERY_MAX: want a duration at least INGEST_POLL_EVERY"},
		{map[string]string{"INGEST_POLL_CONCURRENCY": "0"}, "INGEST_POLL_CONCURRENCY: want 1 to 64"},
		{map[string]string{"INGEST_POLL_RECURRING_EVERY": "0s"}, "INGEST_POLL_RECURRING_EVERY/INGEST_POLL_RECURRING_GIVE_UP: want positive durations"},
		{map[string]string{"RECEIPT_RETENTION": "1h"}, "INGEST_RECEIPT_RETENTION: want at least 24h"},
		{map[string]string{"PSP_TIMEOUT": "soon"}, "INGEST_PSP_TIMEOUT"},
		{map[string]string{"INGEST_MERCHANT_WEBHOOK_URL": "merchant.example.com/hooks", "INGEST_MERCHANT_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
			"INGEST_MERCHANT_WEBHOOK_URL: want an http:// or https:// URL"},
		{map[string]string{"INGEST_MERCHANT_WEBHOOK_URL": "https://merchant.example.com/hooks"}, "INGEST_MERCHANT_WEBHOOK_SECRET: want a base64 whsec_ secret"},
		{map[string]string{"INGEST_MERCHANT_WEBHOOK_URL": "https://merchant.example.com/hooks", "INGEST_MERCHANT_WEBHOOK_SECRET": "whsec_c2hvcnQ="},
			"INGEST_MERCHANT_WEBHOOK_SECRET: want a base64 whsec_ secret of at least 24 bytes"},
		{map[string]string{"INGEST_MERCHANT_WEBHOOK_URL": "https://merchant.example.com/hooks", "INGEST_MERCHANT_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
			"INGEST_CONSUME_NOTIFICATIONS": "false"}, "INGEST_CONSUME_NOTIFICATIONS: want true when INGEST_MERCHANT_WEBHOOK_URL is set"},
		{map[string]string{"INGEST_MERCHANT_WEBHOOK_MAX_ATTEMPTS": "0"}, "INGEST_MERCHANT_WEBHOOK_MAX_ATTEMPTS: want at least 1"},
		{map[string]string{"INGEST_MERCHANT_WEBHOOK_BACKOFF_BASE": "1h", "INGEST_MERCHANT_WEBHOOK_BACKOFF_CAP": "1m"}, "INGEST_MERCHANT_WEBHOOK_BACKOFF_BASE/INGEST_MERCHANT_WEBHOOK_BACKOFF_CAP"},
		{map[string]string{"INGEST_NOTIFICATIONS_WAIT": "30s"}, "INGEST_NOTIFICATIONS_WAIT: want 1s to 20s"},
		{map[string]string{"INGEST_APPLY_LINGER": "2s"}, "INGEST_APPLY_LINGER: want a duration from 0 to 1s"},
		{map[string]string{"INGEST_APPLY_LINGER": "-1ms"}, "INGEST_APPLY_LINGER: want a duration from 0 to 1s"},
	}
	for _, tc := range tests {
		_, err := load(tc.vars)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.vars, err, tc.want)
		}
	}
}

// A PSP's credentials are required only when a webhook source names it:
// Stripe alone needs no DLOCAL_* settings, and dLocal needs all three.
func TestPSPCredentialsAreRequiredOnlyForTheNamedPSPs(t *testing.T) {
	t.Parallel()
	loaded, err := load(map[string]string{"DLOCAL_LOGIN": "", "DLOCAL_TRANS_KEY": "", "DLOCAL_SECRET_KEY": "", "STRIPE_API_KEY": "sk_test_x"})
	if err != nil {
		t.Fatalf("load without DLOCAL_*: %v", err)
	}
	c := loaded.Value
	if err := c.ValidatePSPs(map[string]string{"stripe": "stripe"}); err != nil {
		t.Errorf("stripe alone: %v, want no error", err)
	}
	tests := []struct {
		scopes map[string]string
		want   string
	}{
		{map[string]string{"stripe": "stripe", "dlocal": "dlocal"}, "DLOCAL_LOGIN: want the merchant's dLocal login (a webhook source names psp: dlocal)"},
		{map[string]string{"mercadopago": "mp"}, "MERCADOPAGO_ACCESS_TOKEN"},
	}
	for _, tc := range tests {
		if err := c.ValidatePSPs(tc.scopes); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.scopes, err, tc.want)
		}
	}
	c.DLocalLogin, c.DLocalSecretKey = login, secret
	if err := c.ValidatePSPs(map[string]string{"dlocal": "dlocal"}); err == nil || !strings.Contains(err.Error(), "DLOCAL_TRANS_KEY") {
		t.Errorf("dlocal without a trans key: %v, want DLOCAL_TRANS_KEY named", err)
	}
}

// Consuming notifications needs the relay's keys unless unsigned ones are
// accepted for the rollout; without consuming, none is needed. Errors name
// the variable, never a secret.
func TestNotificationsKeysAreRequiredUnlessUnsignedIsAcceptedOrNotConsumed(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		vars map[string]string
		want string // a variable the error must name; empty for no error
	}{
		"no keys":               {map[string]string{"INGEST_NOTIFICATIONS_KEYS": ""}, "INGEST_NOTIFICATIONS_KEYS"},
		"weak key":              {map[string]string{"INGEST_NOTIFICATIONS_KEYS": "relay-1:weak-secret"}, "INGEST_NOTIFICATIONS_KEYS"},
		"bad mode":              {map[string]string{"INGEST_NOTIFICATIONS_UNSIGNED": "maybe"}, "INGEST_NOTIFICATIONS_UNSIGNED"},
		"keys":                  {map[string]string{"INGEST_NOTIFICATIONS_KEYS": "relay-2:0123456789abcdef,relay-1:fedcba9876543210"}, ""},
		"rollout, no keys":      {map[string]string{"INGEST_NOTIFICATIONS_KEYS": "", "INGEST_NOTIFICATIONS_UNSIGNED": "accept"}, ""},
		"not consumed, no keys": {map[string]string{"INGEST_NOTIFICATIONS_KEYS": "", "INGEST_CONSUME_NOTIFICATIONS": "false"}, ""},
	} {
		_, err := load(c.vars)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error naming %s", name, err, c.want)
		case err != nil && strings.Contains(err.Error(), "weak-secret"):
			t.Errorf("%s: the error shows the secret: %v", name, err)
		}
	}
}
