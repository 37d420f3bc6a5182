package app_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/services/reconciler/internal/app"
)

// clearEnv unsets every reconciler variable for the test (empty means unset
// to the loader), with DATABASE_URL set to dsn.
func clearEnv(t *testing.T, dsn string) {
	t.Helper()
	for _, k := range []string{"INGEST_DATABASE_URL", "INVOICER_DATABASE_URL", "BILLING_QUEUE",
		"RECONCILER_INTERVAL", "RECONCILER_GRACE", "RECONCILER_PAGE_SIZE", "RECONCILER_MAX_PER_RUN",
		"RECONCILER_AUDIT", "RECONCILER_AUDIT_DAYS", "INVOICY_BASE_URL", "INVOICY_EMP_CODIGO", "INVOICY_EMP_PK",
		"INVOICY_ACCESS_KEY", "PROVIDER_TIMEOUT", "PROVIDER_STATUS_MAP"} {
		t.Setenv(k, "")
	}
	t.Setenv("DATABASE_URL", dsn)
}

func TestConfigDefaults(t *testing.T) {
	const dsn = "postgres://reconciler@db.internal:5432/onceflow"
	clearEnv(t, dsn)
	loaded, err := config.Load[app.Config]()
	if err != nil {
		t.Fatal(err)
	}
	c := loaded.Value
	if c.BillingQueue != "onceflow-billing" || c.Interval != time.Minute || c.Grace != 10*time.Minute ||
		c.PageSize != 500 || c.MaxPerRun != 5000 {
		t.Errorf("defaults = %+v", c)
	}
	if c.AuditEnabled() || c.AuditDays != 2 || c.ProviderTimeout != 15*time.Second {
		t.Errorf("audit defaults: enabled %v, days %d, timeout %s; want off without INVOICY_BASE_URL, 2, 15s",
			c.AuditEnabled(), c.AuditDays, c.ProviderTimeout)
	}
	if c.IngestDSN() != dsn || c.InvoicerDSN() != dsn {
		t.Errorf("IngestDSN, InvoicerDSN = %q, %q; want DATABASE_URL", c.IngestDSN(), c.InvoicerDSN())
	}

	t.Setenv("INGEST_DATABASE_URL", "postgres://reader@ingest.internal/onceflow")
	t.Setenv("INVOICER_DATABASE_URL", "postgres://reader@invoicer.internal/onceflow")
	loaded, err = config.Load[app.Config]()
	if err != nil {
		t.Fatal(err)
	}
	if c := loaded.Value; c.IngestDSN() != c.IngestDatabaseURL || c.InvoicerDSN() != c.InvoicerDatabaseURL {
		t.Errorf("own DSNs not used: %q, %q", c.IngestDSN(), c.InvoicerDSN())
	}
}

// setProvider names a complete InvoiCy branch, which turns the audit on.
func setProvider(t *testing.T) {
	t.Helper()
	t.Setenv("INVOICY_BASE_URL", "https://invoicy.example/InvoiCy/")
	t.Setenv("INVOICY_EMP_CODIGO", "SUC")
	t.Setenv("INVOICY_EMP_PK", "PK")
	t.Setenv("INVOICY_ACCESS_KEY", "KEY")
}

func TestConfigAuditSwitch(t *testing.T) {
	tests := []struct {
		audit    string
		provider bool
		want     bool
	}{
		{"", false, false}, {"", true, true}, {"off", true, false}, {"on", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.audit+"/"+strconv.FormatBool(tt.provider), func(t *testing.T) {
			clearEnv(t, "postgres://postgres@127.0.0.1:5432/postgres")
			if tt.provider {
				setProvider(t)
			}
			t.Setenv("RECONCILER_AUDIT", tt.audit)
			loaded, err := config.Load[app.Config]()
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
	tests := []struct{ key, value string }{
		{"RECONCILER_AUDIT", "maybe"},
		{"INVOICY_BASE_URL", "invoicy.example"},
		{"INVOICY_EMP_CODIGO", ""},
		{"INVOICY_EMP_PK", ""},
		{"INVOICY_ACCESS_KEY", " "},
		{"RECONCILER_AUDIT_DAYS", "0"},
		{"RECONCILER_AUDIT_DAYS", "90"},
		{"PROVIDER_TIMEOUT", "0s"},
		{"PROVIDER_STATUS_MAP", "5=paid"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			clearEnv(t, "postgres://postgres@127.0.0.1:5432/postgres")
			setProvider(t)
			t.Setenv(tt.key, tt.value)
			_, err := config.Load[app.Config]()
			if err == nil || !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("Load = %v, want an error naming %s", err, tt.key)
			}
		})
	}

	t.Run("on without a provider", func(t *testing.T) {
		clearEnv(t, "postgres://postgres@127.0.0.1:5432/postgres")
		t.Setenv("RECONCILER_AUDIT", "on")
		_, err := config.Load[app.Config]()
		if err == nil || !strings.Contains(err.Error(), "INVOICY_BASE_URL") {
			t.Fatalf("Load = %v, want an error naming INVOICY_BASE_URL", err)
		}
	})
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	tests := []struct{ key, value string }{
		{"INGEST_DATABASE_URL", "mysql://ingest"},
		{"INVOICER_DATABASE_URL", "not a url"},
		{"BILLING_QUEUE", " "},
		{"RECONCILER_INTERVAL", "0s"},
		{"RECONCILER_INTERVAL", "soon"},
		{"RECONCILER_GRACE", "-1m"},
		{"RECONCILER_PAGE_SIZE", "0"},
		{"RECONCILER_PAGE_SIZE", "100000"},
		{"RECONCILER_MAX_PER_RUN", "0"},
		{"RECONCILER_MAX_PER_RUN", "many"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			clearEnv(t, "postgres://postgres@127.0.0.1:5432/postgres")
			t.Setenv(tt.key, tt.value)
			_, err := config.Load[app.Config]()
			if err == nil || !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("Load = %v, want an error naming %s", err, tt.key)
			}
		})
	}
}
