package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/onceflow/onceflow/pkg/testwait"
)

// observed is a test logger that also keeps the entries for the test.
func observed(tb testing.TB) (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zap.InfoLevel)
	return zap.New(zapcore.NewTee(zaptest.NewLogger(tb).Core(), core)), logs
}

// listeningAddr waits for the server's "listening" entry and returns the
// address it reports: the server binds port 0 itself, so no port number is
// handed out before it is bound.
func listeningAddr(tb testing.TB, logs *observer.ObservedLogs) string {
	tb.Helper()
	var addr string
	testwait.Until(tb, 5*time.Second, 20*time.Millisecond, "the listening address", func() bool {
		for _, e := range logs.FilterMessage("listening").All() {
			addr, _ = e.ContextMap()["addr"].(string)
		}
		return addr != ""
	})
	return addr
}

func TestRunServesUntilCancelled(t *testing.T) {
	t.Parallel()
	env := map[string]string{"FISCAL_ADDR": "127.0.0.1:0"}
	getenv := func(k string) string { return env[k] }
	log, logs := observed(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, log, []string{"serve"}, getenv) }()
	served := map[string]string{"FISCAL_ADDR": listeningAddr(t, logs)}
	probeEnv := func(k string) string { return served[k] }

	deadline := time.Now().Add(5 * time.Second)
	for run(context.Background(), log, []string{"healthcheck"}, probeEnv) != nil {
		if time.Now().After(deadline) {
			t.Fatal("healthcheck never passed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

func TestRunRefusesBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"address", map[string]string{"FISCAL_ADDR": "localhost"}, nil, "FISCAL_ADDR"},
		{"command", map[string]string{}, []string{"migrate"}, "migrate"},
		{"fail rate", map[string]string{"FISCAL_FAIL_RATE": "2"}, nil, "FISCAL_FAIL_RATE"},
		{"hang for", map[string]string{"FISCAL_HANG_FOR": "forever"}, nil, "FISCAL_HANG_FOR"},
		{"pending polls", map[string]string{"FISCAL_PENDING_POLLS_MAX": "0"}, nil, "FISCAL_PENDING_POLLS_MAX"},
		{"webhook secret", map[string]string{"FISCAL_WEBHOOK_URL": "http://127.0.0.1:1/hook", "FISCAL_WEBHOOK_SECRET": "whsec_not base64!"}, nil, "FISCAL_WEBHOOK_SECRET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := run(context.Background(), zaptest.NewLogger(t), tt.args, func(k string) string { return tt.env[k] })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}
