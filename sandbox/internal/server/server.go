// Package server runs the sandbox binaries' HTTP servers: serving with
// graceful shutdown, env-var lookup and JSON answers (the healthcheck
// subcommand is pkg/command.Probe).
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// shutdownTimeout bounds how long in-flight requests may take to drain.
const shutdownTimeout = 10 * time.Second

// Serve serves h on ln until ctx is cancelled, then stops accepting
// connections and drains in-flight requests. It returns nil after a clean
// shutdown and the server's error otherwise.
func Serve(ctx context.Context, log *zap.Logger, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("listening", zap.String("addr", ln.Addr().String()))
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// Env returns getenv(key), or def when it is empty.
func Env(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

// Mask hides a secret for logging, keeping only whether it is set.
func Mask(secret string) string {
	if secret == "" {
		return ""
	}
	return "***"
}

// WriteJSON answers status with v as its JSON body, or 500 when v cannot be
// encoded.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
