package server_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/command"
	"github.com/onceflow/onceflow/sandbox/internal/server"
)

func TestServeHealthcheckShutdown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, zaptest.NewLogger(t), ln, mux) }()

	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, addr := range []string{ln.Addr().String(), ":" + port, "0.0.0.0:" + port} {
		if err := command.Probe(context.Background(), addr); err != nil {
			t.Errorf("Healthcheck(%s): %v", addr, err)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if err := command.Probe(context.Background(), ln.Addr().String()); err == nil {
		t.Error("Healthcheck succeeded after shutdown")
	}
}

func TestHealthcheckRefusesBadAddress(t *testing.T) {
	t.Parallel()
	if err := command.Probe(context.Background(), "no-port"); err == nil {
		t.Error("Healthcheck(no-port) succeeded")
	}
}
