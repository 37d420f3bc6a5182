package command_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/pkg/command"
)

func TestRunDispatches(t *testing.T) {
	t.Parallel()
	ran := ""
	cmds := map[string]command.Func{
		"serve":   func(context.Context) error { ran = "serve"; return nil },
		"migrate": func(context.Context) error { ran = "migrate"; return nil },
	}
	if err := command.Run(context.Background(), nil, cmds); err != nil || ran != "serve" {
		t.Fatalf("no args ran %q (%v), want serve", ran, err)
	}
	if err := command.Run(context.Background(), []string{"migrate"}, cmds); err != nil || ran != "migrate" {
		t.Fatalf("migrate ran %q (%v)", ran, err)
	}
	err := command.Run(context.Background(), []string{"nope"}, cmds)
	if err == nil || !strings.Contains(err.Error(), "healthcheck, migrate, serve") {
		t.Fatalf("unknown subcommand error %v does not list the known ones", err)
	}
}

func TestProbe(t *testing.T) {
	t.Parallel()
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer healthy.Close()
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer sick.Close()
	port := healthy.Listener.Addr().String()[strings.LastIndex(healthy.Listener.Addr().String(), ":"):]
	for _, addr := range []string{healthy.Listener.Addr().String(), port, "0.0.0.0" + port} {
		if err := command.Probe(context.Background(), addr); err != nil {
			t.Errorf("Probe(%s) = %v, want nil", addr, err)
		}
	}
	if err := command.Probe(context.Background(), sick.Listener.Addr().String()); err == nil {
		t.Error("Probe of a 503 succeeded")
	}
	if err := command.Probe(context.Background(), "no-port"); err == nil {
		t.Error("Probe(no-port) succeeded")
	}
	if err := command.Probe(context.Background(), "fd:3"); err == nil || !strings.Contains(err.Error(), "passed down") {
		t.Errorf("Probe(fd:3) = %v, want an error saying the socket was passed down", err)
	}
}
