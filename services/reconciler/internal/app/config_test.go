package app_test

import (
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
		"RECONCILER_INTERVAL", "RECONCILER_GRACE", "RECONCILER_PAGE_SIZE", "RECONCILER_MAX_PER_RUN"} {
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
