package config_test

import (
	"strings"
	"testing"

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
