package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Record      string            `json:"record"`
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

var metricName = regexp.MustCompile(`onceflow_[a-z_]+`)

func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every alert has a severity and a runbook entry, and uses only metrics the
// metrics page documents.
func TestAlertsUseDocumentedMetricsAndHaveARunbook(t *testing.T) {
	var rules ruleFile
	if err := yaml.UnmarshalStrict([]byte(readRepoFile(t, "deploy/prometheus/alerts.yaml")), &rules); err != nil {
		t.Fatal(err)
	}
	metrics := readRepoFile(t, "docs/metrics.md")
	runbook := readRepoFile(t, "docs/runbook.md")
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				checkRecord(t, r.Record, r.Expr, metrics)
				continue
			}
			alerts++
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %+v lacks a name, expression, severity or summary", r)
			}
			if !strings.Contains(runbook, "\n## "+r.Alert+"\n") || r.Annotations["runbook"] != "docs/runbook.md#"+strings.ToLower(r.Alert) {
				t.Errorf("%s: no runbook section, or its runbook annotation does not point at it", r.Alert)
			}
			for _, m := range metricName.FindAllString(r.Expr, -1) {
				if !documented(metrics, m) {
					t.Errorf("%s uses %s, which docs/metrics.md does not document", r.Alert, m)
				}
			}
		}
	}
	if alerts < 8 {
		t.Fatalf("%d alerts, want at least the parked rows, needs-attention, backlog, leader and findings ones", alerts)
	}
}

// checkRecord fails a recording rule without an expression, or whose name
// is not level:metric:operations with a documented metric.
func checkRecord(t *testing.T, name, expr, metrics string) {
	t.Helper()
	if expr == "" || strings.Count(name, ":") < 1 || !strings.HasPrefix(name, "onceflow:") {
		t.Errorf("recording rule %q: want an expression and a name onceflow:<metric>[:<operations>]", name)
	}
	for _, m := range metricName.FindAllString(expr, -1) {
		if !documented(metrics, m) {
			t.Errorf("recording rule %s uses %s, which docs/metrics.md does not document", name, m)
		}
	}
}

// documented reports whether the metrics page documents m, a histogram's
// _bucket, _count and _sum series under the histogram's name.
func documented(metrics, m string) bool {
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(m, suffix); ok && strings.Contains(metrics, "`"+base+"`") {
			return true
		}
	}
	return strings.Contains(metrics, "`"+m+"`")
}

// Every metric a service registers is in the metrics page.
func TestEveryMetricIsDocumented(t *testing.T) {
	metrics := readRepoFile(t, "docs/metrics.md")
	found := 0
	err := filepath.WalkDir(filepath.Join("..", "services"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`"(onceflow_[a-z_]+)"`).FindAllStringSubmatch(string(b), -1) {
			found++
			if !strings.Contains(metrics, "`"+m[1]+"`") {
				t.Errorf("%s registers %s, which docs/metrics.md does not document", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 20 {
		t.Fatalf("found %d metric names in the services, want the lot", found)
	}
}
