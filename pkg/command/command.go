// Package command dispatches a service binary's subcommands: serve (the
// default), migrate, healthcheck, and any extras a service adds.
package command

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"
)

// Func is one subcommand.
type Func func(ctx context.Context) error

// Run runs the subcommand named by args[0] ("serve" when args is empty).
// Unknown names are an error listing the known ones.
func Run(ctx context.Context, args []string, cmds map[string]Func) error {
	name := "serve"
	if len(args) > 0 {
		name = args[0]
	}
	if _, ok := cmds["healthcheck"]; !ok {
		cmds["healthcheck"] = Healthcheck
	}
	fn, ok := cmds[name]
	if !ok {
		names := make([]string, 0, len(cmds))
		for n := range cmds {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("unknown subcommand %q: want one of %s", name, strings.Join(names, ", "))
	}
	return fn(ctx)
}

// Healthcheck probes the running process's /healthz on HTTP_ADDR (default
// :8080). Container images have no curl, so docker compose health checks call
// the binary itself.
func Healthcheck(ctx context.Context) error {
	addr := os.Getenv("HTTP_ADDR")
	if addr == "" {
		addr = ":8080"
	}
	return Probe(ctx, addr)
}

// Probe GETs http://addr/healthz, dialling loopback when addr listens on
// every interface (":8080", "0.0.0.0:8080"). It returns an error unless the
// answer is 200 within 3 s.
func Probe(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("healthcheck: want host:port, got %q", addr)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	url := "http://" + net.JoinHostPort(host, port) + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %d", url, resp.StatusCode)
	}
	return nil
}
