package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseRefusesBadFlagsByName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-backlogs", "1000,lots"}, "-backlogs:"},
		{[]string{"-backlogs", "0"}, "-backlogs:"},
		{[]string{"-concurrency", "0"}, "-concurrency:"},
		{[]string{"-duration", "0s"}, "-duration:"},
		{[]string{"-env", "PROVIDER_RATE_LIMIT"}, "-env:"},
		{[]string{"-stages", "pipeline,nope"}, "-stages:"},
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
	opts, err := parse([]string{"-duration", "20s", "-backlogs", "500, 5000", "-env", "", "-cpuprofile", "cpu.out", "-profiles", "prof", "-open-repeats", "4", "-open-window", "2s"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, profile := opts.cfg, opts.cpuProfile
	if cfg.Duration != 20*time.Second || len(cfg.Backlogs) != 2 || cfg.Backlogs[1] != 5000 || cfg.Env != nil || profile != "cpu.out" || cfg.Profiles != "prof" || opts.readmeOnly ||
		cfg.OpenRepeats != 4 || cfg.OpenWindow != 2*time.Second {
		t.Fatalf("got %+v, profile %q", cfg, profile)
	}
	if opts, err := parse([]string{"-stages", "pipeline,steady"}); err != nil || len(opts.cfg.Stages) != 2 || opts.cfg.Stages[1] != "steady" {
		t.Fatalf("-stages: got %+v, %v", opts.cfg.Stages, err)
	}
	if opts, err := parse([]string{"-readme-only", "-out", "elsewhere"}); err != nil || !opts.readmeOnly || opts.cfg.Out != "elsewhere" {
		t.Fatalf("-readme-only: got %+v, %v", opts, err)
	}
}

func TestRewriteReadmeRendersTheResultsThere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	results := `{"e2e_docs_per_s": 812.5, "relay_ratio": 0.5, "cpus": 2, "started_at": "2026-12-01T04:00:00Z", "config": {"concurrency": 8}}`
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(results), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rewriteReadme(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| `e2e_docs_per_s` | ≥ 800 | 812.50 | yes |", "| `relay_ratio` | ≥ 0.8 | 0.50 | no |"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
}
