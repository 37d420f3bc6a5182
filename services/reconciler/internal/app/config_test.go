package app_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/services/reconciler/internal/app"
)

// ingestAdmin is how the tests reach ingest's admin API, which the
// reconciler requires.
var ingestAdmin = map[string]string{"RECONCILER_INGEST_ADMIN_URL": "http://ingest:9090", "RECONCILER_INGEST_ADMIN_TOKEN": "t0ken-for-admin"}

// load reads a Config from env alone, as service.Main reads the process's,
// with ingestAdmin's settings unless env names them; a key env lacks is
// unset.
func load(env map[string]string) (config.Loaded[app.Config], error) {
	return config.LoadFrom[app.Config](func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return ingestAdmin[k]
	})
}

// withProvider adds a complete InvoiCy branch to env, which turns the audit
// on, and returns env.
func withProvider(env map[string]string) map[string]string {
	env["INVOICY_BASE_URL"] = "https://invoicy.example/InvoiCy/"
	env["INVOICY_EMP_CODIGO"] = "SUC"
	env["INVOICY_EMP_PK"] = "PK"
	env["INVOICY_ACCESS_KEY"] = "KEY"
	return env
}

const localDSN = "postgres://postgres@127.0.0.1:5432/postgres"

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	const dsn = "postgres://reconciler@db.internal:5432/onceflow"
	loaded, err := load(map[string]string{"DATABASE_URL": dsn})
	if err != nil {
		t.Fatal(err)
	}
	c := loaded.Value
	if c.Interval != time.Minute || c.Grace != 10*time.Minute ||
		c.PageSize != 500 || c.MaxPerRun != 5000 || c.SweepOverlap != 2*time.Minute || c.SweepFullSlice != 5000 {
		t.Errorf("defaults = %+v", c)
	}
	if c.AuditEnabled() || c.AuditDays != 2 || c.ProviderTimeout != 15*time.Second {
		t.Errorf("audit defaults: enabled %v, days %d, timeout %s; want off without INVOICY_BASE_URL, 2, 15s",
			c.AuditEnabled(), c.AuditDays, c.ProviderTimeout)
	}
	if c.IngestDSN() != dsn || c.InvoicerDSN() != dsn {
		t.Errorf("IngestDSN, InvoicerDSN = %q, %q; want DATABASE_URL", c.IngestDSN(), c.InvoicerDSN())
	}

	loaded, err = load(map[string]string{"DATABASE_URL": dsn,
		"INGEST_DATABASE_URL":   "postgres://reader@ingest.internal/onceflow",
		"INVOICER_DATABASE_URL": "postgres://reader@invoicer.internal/onceflow"})
	if err != nil {
		t.Fatal(err)
	}
	if c := loaded.Value; c.IngestDSN() != c.IngestDatabaseURL || c.InvoicerDSN() != c.InvoicerDatabaseURL {
		t.Errorf("own DSNs not used: %q, %q", c.IngestDSN(), c.InvoicerDSN())
	}
}

func TestConfigAuditSwitch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		audit    string
		provider bool
		want     bool
	}{
		{"", false, false}, {"", true, true}, {"off", true, false}, {"on", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.audit+"/"+strconv.FormatBool(tt.provider), func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DATABASE_URL": localDSN, "RECONCILER_AUDIT": tt.audit}
			if tt.provider {
				withProvider(env)
			}
			loaded, err := load(env)
			if err != nil {
				t.Fatal(err)
			}
			if got := loaded.Value.AuditEnabled(); got != tt.want {
				t.Errorf("AuditEnabled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConfigAuditErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	tests := []struct{ key, value string }{
		{"RECONCILER_AUDIT", "maybe"},
		{"INVOICY_BASE_URL", "invoicy.example"},
		{"INVOICY_EMP_CODIGO", ""},
		{"INVOICY_EMP_PK", ""},
		{"INVOICY_ACCESS_KEY", " "},
		{"RECONCILER_AUDIT_DAYS", "0"},
		{"RECONCILER_AUDIT_DAYS", "90"},
		{"RECONCILER_AUDIT_CURRENT_EVERY", "-1m"},
		{"RECONCILER_AUDIT_CURRENT_EVERY", "25h"},
		{"RECONCILER_AUDIT_PAST_EVERY", "-1m"},
		{"RECONCILER_AUDIT_PAST_EVERY", "24h"}, // with 2 days, yesterday would leave the period before its next listing
		{"RECONCILER_AUDIT_RATE", "-1"},
		{"RECONCILER_PROVIDER_TIMEOUT", "0s"},
		{"RECONCILER_PROVIDER_STATUS_MAP", "5=paid"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			t.Parallel()
			env := withProvider(map[string]string{"DATABASE_URL": localDSN})
			env[tt.key] = tt.value
			_, err := load(env)
			if err == nil || !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("Load = %v, want an error naming %s", err, tt.key)
			}
		})
	}

	t.Run("on without a provider", func(t *testing.T) {
		t.Parallel()
		_, err := load(map[string]string{"DATABASE_URL": localDSN, "RECONCILER_AUDIT": "on"})
		if err == nil || !strings.Contains(err.Error(), "INVOICY_BASE_URL") {
			t.Fatalf("Load = %v, want an error naming INVOICY_BASE_URL", err)
		}
	})
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	tests := []struct{ key, value string }{
		{"INGEST_DATABASE_URL", "mysql://ingest"},
		{"INVOICER_DATABASE_URL", "not a url"},
		{"RECONCILER_INGEST_ADMIN_URL", ""},
		{"RECONCILER_INGEST_ADMIN_URL", "ingest:9090"},
		{"RECONCILER_INGEST_ADMIN_TOKEN", ""},
		{"RECONCILER_PSP_AUDIT", "maybe"},
		{"RECONCILER_INTERVAL", "0s"},
		{"RECONCILER_INTERVAL", "soon"},
		{"RECONCILER_GRACE", "-1m"},
		{"RECONCILER_PAGE_SIZE", "0"},
		{"RECONCILER_PAGE_SIZE", "100000"},
		{"RECONCILER_MAX_PER_RUN", "0"},
		{"RECONCILER_MAX_PER_RUN", "many"},
		{"RECONCILER_SWEEP_OVERLAP", "0s"},
		{"RECONCILER_SWEEP_OVERLAP", "a while"},
		{"RECONCILER_SWEEP_FULL_SLICE", "0"},
		{"RECONCILER_RUNS_RETENTION", "23h"},
		{"RECONCILER_RUNS_RETENTION", "-1h"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			t.Parallel()
			_, err := load(map[string]string{"DATABASE_URL": localDSN, tt.key: tt.value})
			if err == nil || !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("Load = %v, want an error naming %s", err, tt.key)
			}
		})
	}
}

// The settings renamed with the RECONCILER_ prefix are still read from their
// old names for one release, and Loaded.Renamed names the new ones; the new
// name wins when both are set.
func TestConfigReadsRenamedSettings(t *testing.T) {
	t.Parallel()
	loaded, err := load(map[string]string{"DATABASE_URL": localDSN, "PUSHGATEWAY_URL": "http://gateway.internal:9091"})
	if err != nil {
		t.Fatal(err)
	}
	if c := loaded.Value; c.PushgatewayURL != "http://gateway.internal:9091" {
		t.Errorf("PushgatewayURL = %q; want the old name's value", c.PushgatewayURL)
	}
	if len(loaded.Renamed) != 1 || loaded.Renamed["PUSHGATEWAY_URL"] != "RECONCILER_PUSHGATEWAY_URL" {
		t.Errorf("Renamed = %v, want PUSHGATEWAY_URL renamed RECONCILER_PUSHGATEWAY_URL", loaded.Renamed)
	}
	loaded, err = load(map[string]string{"DATABASE_URL": localDSN, "PUSHGATEWAY_URL": "http://old", "RECONCILER_PUSHGATEWAY_URL": "http://new"})
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Value.PushgatewayURL != "http://new" || len(loaded.Renamed) != 0 {
		t.Errorf("with both names: PushgatewayURL %q, Renamed %v; want the new name's value and no warning", loaded.Value.PushgatewayURL, loaded.Renamed)
	}
}

// The settings of the reconciler that sent billing events itself are
// retired: set, they are no error, and Retired names them for a warning.
func TestConfigRetiredSettings(t *testing.T) {
	t.Parallel()
	loaded, err := load(map[string]string{"DATABASE_URL": localDSN})
	if err != nil || len(loaded.Value.Retired()) != 0 {
		t.Fatalf("without them: %v, Retired %v; want none", err, loaded.Value.Retired())
	}
	loaded, err = load(map[string]string{"DATABASE_URL": localDSN,
		"RECONCILER_SIGNING_KEY": "reconciler-1:reconciler-signing-secret", "RECONCILER_BILLING_QUEUE": "onceflow-billing"})
	if err != nil {
		t.Fatalf("retired settings are an error: %v", err)
	}
	if got := loaded.Value.Retired(); strings.Join(got, ",") != "RECONCILER_SIGNING_KEY,RECONCILER_BILLING_QUEUE" {
		t.Errorf("Retired = %v, want both", got)
	}
}

// The PSP audit is on unless RECONCILER_PSP_AUDIT=off; on, its settings
// are checked and a bad one names its variable.
func TestConfigPSPAudit(t *testing.T) {
	t.Parallel()
	loaded, err := load(map[string]string{"DATABASE_URL": localDSN, "RECONCILER_PSP_AUDIT": "off", "RECONCILER_PSP_AUDIT_SETTLE": "72h"})
	if err != nil || loaded.Value.PSPAuditEnabled() || loaded.Value.PSPAuditWindow != 48*time.Hour {
		t.Fatalf("off: %+v (%v), want the PSP audit off and its settings unchecked", loaded.Value, err)
	}
	on := func(extra ...string) map[string]string {
		env := map[string]string{"DATABASE_URL": localDSN, "RECONCILER_INGEST_ADMIN_URL": "http://ingest:9090", "RECONCILER_INGEST_ADMIN_TOKEN": "t0ken-for-admin"}
		for i := 0; i < len(extra); i += 2 {
			env[extra[i]] = extra[i+1]
		}
		return env
	}
	if loaded, err := load(on()); err != nil || !loaded.Value.PSPAuditEnabled() {
		t.Fatalf("with ingest's admin address: %v, enabled %v", err, loaded.Value.PSPAuditEnabled())
	}
	for _, tt := range []struct{ key, value, want string }{
		{"RECONCILER_INGEST_ADMIN_URL", "ingest:9090", "RECONCILER_INGEST_ADMIN_URL"},
		{"RECONCILER_INGEST_ADMIN_TOKEN", "", "RECONCILER_INGEST_ADMIN_TOKEN"},
		{"RECONCILER_PSP_AUDIT_SETTLE", "72h", "RECONCILER_PSP_AUDIT_WINDOW"},
	} {
		if _, err := load(on(tt.key, tt.value)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s=%q: %v, want an error naming %s", tt.key, tt.value, err, tt.want)
		}
	}
}
