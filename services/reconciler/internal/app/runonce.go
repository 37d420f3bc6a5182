package app

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
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
	if perr := pushMetrics(ctx, cfg.PushgatewayURL, e.reg, err == nil); perr != nil {
		log.Warn("push metrics", zap.Error(perr))
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, sum)
	return err
}

// pushMetrics sends the run's metrics from g to the Pushgateway at url
// (RECONCILER_PUSHGATEWAY_URL), when set: a one-off process is gone before
// Prometheus could scrape it. The manifests run serve, which is scraped.
// It adds (POST): only the metrics this run has replace the group's, and a
// failed run leaves out the last-success gauges, so the gateway keeps the
// time of the last run that succeeded instead of this process's zero.
func pushMetrics(ctx context.Context, url string, g prometheus.Gatherer, succeeded bool) error {
	if url == "" {
		return nil
	}
	if !succeeded {
		g = without(g, lastSuccessMetrics...)
	}
	return push.New(url, "onceflow-reconciler").Gatherer(g).AddContext(ctx)
}

// lastSuccessMetrics are the gauges a successful run sets.
var lastSuccessMetrics = []string{"onceflow_reconciler_last_run_timestamp_seconds", "onceflow_reconciler_last_audit_timestamp_seconds"}

// without is g's metric families but those called names.
func without(g prometheus.Gatherer, names ...string) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		return slices.DeleteFunc(mfs, func(mf *dto.MetricFamily) bool { return slices.Contains(names, mf.GetName()) }), err
	})
}
