// Command promrule writes the Prometheus Operator's PrometheusRule for
// onceflow from deploy/prometheus/alerts.yaml, the one place alerts are
// written: `go generate ./deploy` (run from the repository root) after
// changing the rules. deploy's tests fail while the two disagree.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

const header = `# GENERATED from deploy/prometheus/alerts.yaml by deploy/internal/promrule
# (go generate ./deploy); do not edit. The Prometheus Operator loads it; the
# groups are alerts.yaml's, which promtool checks and tests.
`

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: promrule <alerts.yaml> <prometheusrule.yaml>")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "promrule:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var rules map[string]any
	if err := yaml.UnmarshalStrict(b, &rules); err != nil {
		return fmt.Errorf("parse %s: %w", in, err)
	}
	rule := map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata": map[string]any{
			"name":   "onceflow",
			"labels": map[string]any{"app.kubernetes.io/name": "onceflow"},
		},
		"spec": rules,
	}
	y, err := yaml.Marshal(rule)
	if err != nil {
		return err
	}
	return os.WriteFile(out, append([]byte(header), y...), 0o644)
}
