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
	env := map[string]string{"FISCAL_ADDR": freeAddr(t)}
	getenv := func(k string) string { return env[k] }
	log := zaptest.NewLogger(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, log, []string{"serve"}, getenv) }()

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
