package main

import (
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
		{[]string{"extra"}, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if _, _, err := parse(tt.args); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("parse(%q) = %v, want an error with %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestParseReadsFlags(t *testing.T) {
	t.Parallel()
	cfg, profile, err := parse([]string{"-duration", "20s", "-backlogs", "500, 5000", "-env", "", "-cpuprofile", "cpu.out", "-profiles", "prof"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Duration != 20*time.Second || len(cfg.Backlogs) != 2 || cfg.Backlogs[1] != 5000 || cfg.Env != nil || profile != "cpu.out" || cfg.Profiles != "prof" {
		t.Fatalf("got %+v, profile %q", cfg, profile)
	}
}
