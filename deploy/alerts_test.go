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
// metrics page documents and the code registers.
func TestAlertsUseDocumentedMetricsAndHaveARunbook(t *testing.T) {
	var rules ruleFile
	if err := yaml.UnmarshalStrict([]byte(readRepoFile(t, "deploy/prometheus/alerts.yaml")), &rules); err != nil {
		t.Fatal(err)
	}
	metrics := readRepoFile(t, "docs/metrics.md")
	runbook := readRepoFile(t, "docs/runbook.md")
	code := codeMetrics(t)
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
				if !registered(code, m) {
					t.Errorf("%s uses %s, which no service or package registers", r.Alert, m)
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

// codeMetrics returns the onceflow_ names the non-test Go files under
// services/ and pkg/ spell as string literals, each with the first file that
// does: every metric the code registers, and a few names that are not
// metrics (a database, an SQS attribute) that nothing reads as one.
func codeMetrics(t *testing.T) map[string]string {
	t.Helper()
	lit := regexp.MustCompile(`"(onceflow_[a-z_]+)"`)
	out := map[string]string{}
	for _, root := range []string{"services", "pkg"} {
		err := filepath.WalkDir(filepath.Join("..", root), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
				if _, ok := out[m[1]]; !ok {
					out[m[1]] = path
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// registered reports whether the code registers m, a histogram's _bucket,
// _count and _sum series under the histogram's name.
func registered(code map[string]string, m string) bool {
	if _, ok := code[m]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(m, suffix); ok {
			if _, ok := code[base]; ok {
				return true
			}
		}
	}
	return false
}

// Every metric a service registers is in the metrics page, and every metric
// the page's table lists is registered by the code (no stale row).
func TestEveryMetricIsDocumented(t *testing.T) {
	metrics := readRepoFile(t, "docs/metrics.md")
	code := codeMetrics(t)
	found := 0
	for m, path := range code {
		if !strings.HasPrefix(path, filepath.Join("..", "services")) {
			continue
		}
		found++
		if !strings.Contains(metrics, "`"+m+"`") {
			t.Errorf("%s registers %s, which docs/metrics.md does not document", path, m)
		}
	}
	if found < 20 {
		t.Fatalf("found %d metric names in the services, want the lot", found)
	}
	rows := regexp.MustCompile("(?m)^\\| `(onceflow_[a-z_]+)` \\|").FindAllStringSubmatch(metrics, -1)
	if len(rows) < 20 {
		t.Fatalf("docs/metrics.md's table has %d rows, want the lot", len(rows))
	}
	for _, m := range rows {
		if _, ok := code[m[1]]; !ok {
			t.Errorf("docs/metrics.md lists %s, which no service or package registers", m[1])
		}
	}
}

// guardOf names, for each gauge an alert reads, the series whose absent()
// pages when the gauge is gone: the gauge itself, or one that the same read
// (or the same scrape, when a failed read fails the whole scrape) exports.
var guardOf = map[string]string{
	// ingest: one scrape; a failed backlog, case or delivery read fails it.
	"onceflow_ingest_receipts_pending":                          "onceflow_ingest_receipts_pending",
	"onceflow_ingest_receipts_oldest_pending_timestamp_seconds": "onceflow_ingest_receipts_pending",
	"onceflow_ingest_merchant_deliveries":                       "onceflow_ingest_receipts_pending",
	"onceflow_ingest_poll_earliest_due_timestamp_seconds":       "onceflow_ingest_receipts_pending",
	// the relay: the gauges its processes set; backlog ones on the leader.
	"onceflow_relay_is_leader":    "onceflow_relay_is_leader",
	"onceflow_relay_parked_rows":  "onceflow_relay_is_leader",
	"onceflow_relay_pending_rows": "onceflow_relay_is_leader",
	"onceflow_relay_shards_held":  "onceflow_relay_is_leader",
	"onceflow_relay_shards":       "onceflow_relay_is_leader",
	// the invoicer's document read (pkg/scrapecache).
	"onceflow_invoicer_documents_due":             "onceflow_invoicer_documents_due",
	"onceflow_invoicer_needs_attention_documents": "onceflow_invoicer_documents_due",
	"onceflow_invoicer_oldest_due_seconds":        "onceflow_invoicer_documents_due",
	// the reconciler: a failed findings read fails its scrape.
	"onceflow_reconciler_last_run_timestamp_seconds": "onceflow_reconciler_last_run_timestamp_seconds",
	"onceflow_reconciler_findings_open":              "onceflow_reconciler_last_run_timestamp_seconds",
	// the audits' gauge comes and goes with the reconciler's scrape, and is
	// rightly absent alone when every audit is off.
	"onceflow_reconciler_last_audit_timestamp_seconds": "onceflow_reconciler_last_run_timestamp_seconds",
	"onceflow_dead_letter_messages":                    "onceflow_dead_letter_messages",
	// every service's case read, which the invoicer lets fail alone.
	"onceflow_cases_open":                   "onceflow_cases_open",
	"onceflow_case_oldest_open_age_seconds": "onceflow_cases_open",
}

// Every gauge an alert reads, directly or through a recording rule, has a
// guard: an alert on absent() of its series or of one that vanishes with it.
// (Counters and histograms are read through rate() or increase(), where no
// series means nothing happened; their service's guard covers it being gone.)
func TestEveryAlertedGaugeHasAnAbsentGuard(t *testing.T) {
	var rules ruleFile
	if err := yaml.UnmarshalStrict([]byte(readRepoFile(t, "deploy/prometheus/alerts.yaml")), &rules); err != nil {
		t.Fatal(err)
	}
	gauges := documentedGauges(readRepoFile(t, "docs/metrics.md"))
	records := map[string]string{}
	guarded := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				records[r.Record] = r.Expr
			}
			for _, m := range regexp.MustCompile(`absent\((onceflow_[a-z_]+)`).FindAllStringSubmatch(r.Expr, -1) {
				if r.Alert != "" {
					guarded[m[1]] = true
				}
			}
		}
	}
	checked := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			expr := r.Expr
			for name, e := range records {
				if strings.Contains(r.Expr, name) {
					expr += " " + e
				}
			}
			for _, m := range metricName.FindAllString(expr, -1) {
				if !gauges[m] {
					continue
				}
				checked++
				guard, ok := guardOf[m]
				if !ok {
					t.Errorf("%s reads gauge %s, which has no guard in guardOf: add an absent() alert that pages when it vanishes", r.Alert, m)
				} else if !guarded[guard] {
					t.Errorf("%s reads gauge %s, whose guard series %s no alert takes absent() of", r.Alert, m, guard)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d gauge reads, want the lot", checked)
	}
}

// documentedGauges are the metrics docs/metrics.md's table types as gauges.
func documentedGauges(doc string) map[string]bool {
	out := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(onceflow_[a-z_]+)` \\| gauge \\|").FindAllStringSubmatch(doc, -1) {
		out[m[1]] = true
	}
	return out
}
