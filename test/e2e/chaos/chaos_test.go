package chaos

import (
	"context"
	"strings"
	"testing"
	"time"
)

// logWriter sends progress lines to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ciProfile is the chaos run `make test` keeps forever: 300 payments, five
// SIGKILLs, one SQS restart that loses its messages and one PostgreSQL
// crash, with the default PSP faults.
func ciProfile() Config {
	cfg := Defaults()
	cfg.Payments, cfg.Kills, cfg.KillEvery, cfg.Quiesce = 300, 5, 3*time.Second, 3*time.Minute
	return cfg
}

func TestChaosCIProfile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cfg := ciProfile()
	cfg.Dir = t.TempDir()
	res, err := Run(ctx, cfg, logWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if !res.OK() {
		t.Fatalf("%s\nproblems:\n%s", res, strings.Join(res.Problems, "\n"))
	}
	if res.Payments != cfg.Payments || res.Kills != cfg.Kills || res.SQSRestarts != 1 || res.PGRestarts != 1 {
		t.Fatalf("the run did not do what the profile says: %s", res)
	}
	if res.Documents != res.Payments+res.Refunds {
		t.Fatalf("documents = %d, want one per payment and refund (%d)", res.Documents, res.Payments+res.Refunds)
	}
}
