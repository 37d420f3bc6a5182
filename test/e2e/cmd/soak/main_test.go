package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/test/e2e/pgcluster"
)

func TestParseRefusesBadFlagsByName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-documents", "5000", "-window", "2000"}, "-documents:"},
		{[]string{"-window", "0"}, "-window:"},
		{[]string{"-rate", "0"}, "-rate:"},
		{[]string{"-tolerance", "1.5"}, "-tolerance:"},
		{[]string{"-pg", "elsewhere"}, "-pg:"},
		{[]string{"-env", "INVOICER_PROVIDER_RATE_LIMIT"}, "-env:"},
		{[]string{"-pg-settings", "shared_buffers"}, "-pg-settings:"},
		{[]string{"extra"}, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if _, err := parse(tt.args); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("parse(%q) = %v, want an error with %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestParseReadsFlags(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]string{"-documents", "6000", "-window", "2000", "-rate", "50", "-retention", "20s",
		"-reconcile-every", "5s", "-out", "/tmp/small", "-env", "A=1,B=2", "-pg", "shared", "-pg-settings", "work_mem=8MB"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Documents != 6000 || cfg.Window != 2000 || cfg.Rate != 50 || cfg.Retention != 20*time.Second ||
		cfg.ReconcileEvery != 5*time.Second || cfg.Out != "/tmp/small" || cfg.PG != "shared" || len(cfg.Env) != 2 || cfg.Env[1] != "B=2" ||
		len(cfg.PGSettings) != 1 || cfg.PGSettings[0] != "work_mem=8MB" {
		t.Fatalf("got %+v", cfg)
	}
	if cfg, err := parse(nil); err != nil || cfg.Documents != 1_000_000 || cfg.Window != 100_000 || cfg.PG != "private" || cfg.Env[0] != "INVOICER_PROVIDER_RATE_LIMIT=0" ||
		!slices.Equal(cfg.PGSettings[:len(pgcluster.Recommended)], pgcluster.Recommended) || !strings.HasPrefix(cfg.PGSettings[len(cfg.PGSettings)-1], "shared_buffers=") {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
	if cfg, err := parse([]string{"-env", ""}); err != nil || cfg.Env != nil {
		t.Fatalf("-env '': %+v, %v", cfg, err)
	}
	if cfg, err := parse([]string{"-readme-only", "-out", "elsewhere"}); err != nil || !cfg.readmeOnly || cfg.Out != "elsewhere" {
		t.Fatalf("-readme-only: %+v, %v", cfg, err)
	}
}
