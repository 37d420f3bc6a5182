package app

import (
	"context"
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus/push"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/logging"
)

// runOnce runs one reconciliation without the lease and prints its summary
// line to stdout; the log goes to stderr. A second one running at the same
// time only sends some events twice, which the invoicer ignores.
func runOnce(ctx context.Context, getenv config.Getenv, _ []string, stdout io.Writer) error {
	loaded, err := config.LoadFrom[Config](getenv)
	if err != nil {
		return err
	}
	cfg := loaded.Value
	log, err := logging.New("reconciler", cfg.LogLevel)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer func() { _ = log.Sync() }()
	log.Info("config", loaded.Fields()...)
	loaded.Warn(log)
	e, err := openEngine(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer e.close()
	sum, err := e.reconciler.Once(ctx)
	if perr := e.push(ctx, cfg.PushgatewayURL); perr != nil {
		log.Warn("push metrics", zap.Error(perr))
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, sum)
	return err
}

// push sends the run's metrics to the Pushgateway at url
// (RECONCILER_PUSHGATEWAY_URL), when set: a one-off process is gone before
// Prometheus could scrape it. The manifests run serve, which is scraped.
func (e *engine) push(ctx context.Context, url string) error {
	if url == "" {
		return nil
	}
	return push.New(url, "onceflow-reconciler").Gatherer(e.reg).PushContext(ctx)
}
