package config_test

import (
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/onceflow/onceflow/pkg/config"
)

type svc struct {
	config.Common
	PSPSecret string `env:"DLOCAL_SECRET_KEY"`
	Workers   int    `env:"WORKERS" envDefault:"4"`
}

func TestLoadMasksSecrets(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://app:hunter2@db:5432/x")
	t.Setenv("DLOCAL_SECRET_KEY", "s3cr3t-value")
	loaded, err := config.Load[svc]()
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Value.Workers != 4 || loaded.Value.PSPSecret != "s3cr3t-value" {
		t.Fatalf("parsed %+v", loaded.Value)
	}
	var all strings.Builder
	for _, f := range loaded.Fields() {
		all.WriteString(f.Key + "=" + f.String + " ")
	}
	got := all.String()
	for _, leak := range []string{"hunter2", "s3cr3t-value"} {
		if strings.Contains(got, leak) {
			t.Errorf("fields leak %q: %s", leak, got)
		}
	}
	if !strings.Contains(got, "DATABASE_URL=postgres://app:***@db:5432/x") {
		t.Errorf("DATABASE_URL not shown masked: %s", got)
	}
}

func TestLoadNamesBadVariable(t *testing.T) {
	t.Setenv("WORKERS", "many")
	_, err := config.Load[svc]()
	if err == nil || !strings.Contains(err.Error(), "WORKERS") {
		t.Fatalf("error %v does not name WORKERS", err)
	}
}

func TestLoadRunsValidate(t *testing.T) {
	t.Setenv("SHUTDOWN_TIMEOUT", "0s")
	_, err := config.Load[svc]()
	if err == nil || !strings.Contains(err.Error(), "SHUTDOWN_TIMEOUT") {
		t.Fatalf("error %v does not name SHUTDOWN_TIMEOUT", err)
	}
}

type renamedSvc struct {
	config.Common
	Workers int `env:"SVC_WORKERS" renamed:"WORKERS" envDefault:"4"`
	Batch   int `env:"SVC_BATCH" renamed:"BATCH" envDefault:"10"`
}

func TestLoadFromReadsOnlyGetenv(t *testing.T) {
	t.Setenv("SVC_WORKERS", "9") // the process environment must not be read
	env := map[string]string{"SVC_BATCH": "3"}
	loaded, err := config.LoadFrom[renamedSvc](func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Value.Workers != 4 || loaded.Value.Batch != 3 || len(loaded.Renamed) != 0 {
		t.Fatalf("parsed %+v, renamed %v", loaded.Value, loaded.Renamed)
	}
}

func TestLoadFromReadsRenamedVariables(t *testing.T) {
	env := map[string]string{"WORKERS": "7", "BATCH": "5", "SVC_BATCH": "6"}
	loaded, err := config.LoadFrom[renamedSvc](func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Value.Workers != 7 {
		t.Errorf("workers %d, want 7 from the old name", loaded.Value.Workers)
	}
	if loaded.Value.Batch != 6 {
		t.Errorf("batch %d, want 6: the new name wins over the old", loaded.Value.Batch)
	}
	if len(loaded.Renamed) != 1 || loaded.Renamed["WORKERS"] != "SVC_WORKERS" {
		t.Errorf("renamed %v, want only WORKERS → SVC_WORKERS", loaded.Renamed)
	}
	core, logs := observer.New(zap.WarnLevel)
	loaded.Warn(zap.New(core))
	if logs.Len() != 1 || logs.All()[0].ContextMap()["new"] != "SVC_WORKERS" {
		t.Errorf("warnings %v, want one naming SVC_WORKERS", logs.All())
	}
}

func TestLoadFromNamesBadRenamedVariable(t *testing.T) {
	env := map[string]string{"WORKERS": "many"}
	_, err := config.LoadFrom[renamedSvc](func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), "SVC_WORKERS") {
		t.Fatalf("error %v does not name SVC_WORKERS", err)
	}
}

type sourcesSvc struct {
	config.Common
	SourcesFile string        `env:"SVC_SOURCES_FILE"`
	Getenv      config.Getenv `env:"-"`
}

func TestLoadFromKeepsGetenvForVariablesNamedAtRunTime(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SVC_SOURCES_FILE": "/etc/sources.yaml", "STRIPE_SECRET": "whsec_x"}
	loaded, err := config.LoadFrom[sourcesSvc](func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Value.Getenv == nil || loaded.Value.Getenv("STRIPE_SECRET") != "whsec_x" {
		t.Fatal("the Getenv field does not read the environment the config was loaded from")
	}
	for _, f := range loaded.Fields() {
		if f.String == "whsec_x" {
			t.Fatalf("fields show a variable only the Getenv field can read: %v", loaded.Fields())
		}
	}
}

// The admin port may not be the public one: the admin routes would then be
// reachable wherever the webhooks are. Port 0 (a free port each) is fine.
func TestLoadRefusesTheAdminPortOnThePublicOne(t *testing.T) {
	for _, tc := range []struct {
		http, admin string
		ok          bool
	}{
		{"", "", true}, // the defaults, :8080 and :9090
		{":8080", ":8080", false},
		{"127.0.0.1:8080", ":8080", false},
		{"0.0.0.0:9000", "10.0.0.1:9000", true},
		{"127.0.0.1:0", "127.0.0.1:0", true},
		{"fd:3", "fd:4", true},
		{"fd:3", "fd:3", false},
	} {
		vars := map[string]string{"HTTP_ADDR": tc.http, "ADMIN_ADDR": tc.admin}
		loaded, err := config.LoadFrom[svc](func(k string) string { return vars[k] })
		if tc.ok && err != nil {
			t.Errorf("HTTP_ADDR %q ADMIN_ADDR %q: %v", tc.http, tc.admin, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "ADMIN_ADDR")) {
			t.Errorf("HTTP_ADDR %q ADMIN_ADDR %q: error %v, want one naming ADMIN_ADDR", tc.http, tc.admin, err)
		}
		if tc.http == "" && err == nil && (loaded.Value.HTTPAddr != ":8080" || loaded.Value.AdminAddr != ":9090") {
			t.Errorf("defaults HTTP_ADDR %q ADMIN_ADDR %q, want :8080 and :9090", loaded.Value.HTTPAddr, loaded.Value.AdminAddr)
		}
	}
}
