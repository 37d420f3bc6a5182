package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// promtool runs Prometheus's promtool in deploy/prometheus, failing the test
// when it is not installed: Debian's prometheus package provides it, and
// .ci/run installs that package.
func promtool(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install it with `apt-get install -y --no-install-recommends prometheus` (Debian's package provides /usr/bin/promtool; .ci/run does this)")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = "prometheus"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %v: %v\n%s", args, err, out)
	}
}

// The alert and recording rules parse and their expressions are valid PromQL.
func TestPromtoolCheckRules(t *testing.T) {
	t.Parallel()
	promtool(t, "check", "rules", "alerts.yaml")
}

// ruleTestFiles are the promtool rule tests: alerts_test.yaml evaluates
// every minute, alerts_days_test.yaml every ten for the days-long windows.
var ruleTestFiles = []string{"alerts_test.yaml", "alerts_days_test.yaml"}

// The rule unit tests pass: each alert fires on its bad series and stays
// quiet on its good one.
func TestPromtoolTestRules(t *testing.T) {
	t.Parallel()
	promtool(t, append([]string{"test", "rules"}, ruleTestFiles...)...)
}

type ruleTests struct {
	Tests []struct {
		Name  string `json:"name"`
		Cases []struct {
			Alert string            `json:"alertname"`
			Exp   []json.RawMessage `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// Every alert has a rule test that expects it to fire and one that expects
// it to stay quiet.
func TestEveryAlertHasARuleTestEachWay(t *testing.T) {
	t.Parallel()
	var rules ruleFile
	if err := yaml.Unmarshal([]byte(readRepoFile(t, "deploy/prometheus/alerts.yaml")), &rules); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, name := range ruleTestFiles {
		b, err := os.ReadFile(filepath.Join("prometheus", name))
		if err != nil {
			t.Fatal(err)
		}
		var tests ruleTests
		if err := yaml.Unmarshal(b, &tests); err != nil {
			t.Fatal(err)
		}
		for _, g := range tests.Tests {
			for _, c := range g.Cases {
				if len(c.Exp) > 0 {
					fires[c.Alert] = true
				} else {
					quiet[c.Alert] = true
				}
			}
		}
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && (!fires[r.Alert] || !quiet[r.Alert]) {
				t.Errorf("%s: a rule test that fires it %v, one that keeps it quiet %v; want both", r.Alert, fires[r.Alert], quiet[r.Alert])
			}
		}
	}
}
