package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestRunServesUntilCancelled(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PSP_ADDR": freeAddr(t), "PSP_NOTIFY_URL": "http://127.0.0.1:1/hook"}
	getenv := func(k string) string { return env[k] }
	log := zaptest.NewLogger(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, log, nil, getenv) }()

	deadline := time.Now().Add(5 * time.Second)
	for run(context.Background(), log, []string{"healthcheck"}, getenv) != nil {
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
		name     string
		env      map[string]string
		args     []string
		variable string
	}{
		{"address", map[string]string{"PSP_ADDR": "8091"}, nil, "PSP_ADDR"},
		{"notify url", map[string]string{"PSP_NOTIFY_URL": "/hook"}, nil, "PSP_NOTIFY_URL"},
		{"retry delay", map[string]string{"PSP_RETRY_DELAY": "5"}, nil, "PSP_RETRY_DELAY"},
		{"loss rate", map[string]string{"PSP_LOSS_RATE": "1.5"}, nil, "PSP_LOSS_RATE"},
		{"delay", map[string]string{"PSP_DELAY_MAX": "soon"}, nil, "PSP_DELAY_MAX"},
		{"copies", map[string]string{"PSP_MAX_COPIES": "1"}, nil, "PSP_MAX_COPIES"},
		{"seed", map[string]string{"PSP_SEED": "-1"}, nil, "PSP_SEED"},
		{"command", map[string]string{}, []string{"migrate"}, "migrate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := run(context.Background(), zaptest.NewLogger(t), tt.args, func(k string) string { return tt.env[k] })
			if err == nil || !strings.Contains(err.Error(), tt.variable) {
				t.Fatalf("run = %v, want an error naming %s", err, tt.variable)
			}
		})
	}
}
