package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	UID    string  `json:"uid"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"` // a collapsed row's panels
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

var (
	histSuffixes = []string{"_bucket", "_sum", "_count"}
	byClause     = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	selector     = regexp.MustCompile(`(onceflow_[a-z_]+)\{([^}]*)\}`)
	matcherLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	// scrapeLabels are the labels Prometheus adds to every series.
	scrapeLabels = []string{"job", "instance", "pod", "namespace", "service"}
)

// documentedLabels returns, for each metric of docs/metrics.md's table, the
// labels its labels column names.
func documentedLabels(doc string) map[string][]string {
	out := map[string][]string{}
	row := regexp.MustCompile("(?m)^\\| `(onceflow_[a-z_]+)` \\| [a-z]+ \\| ([^|]*) \\|")
	for _, m := range row.FindAllStringSubmatch(doc, -1) {
		var labels []string
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		out[m[1]] = labels
	}
	return out
}

// checkLabels returns an error for a label the query groups by or matches
// on that none of its metrics has (le for a histogram's buckets; the labels
// a scrape adds are allowed everywhere).
func checkLabels(expr string, labels map[string][]string) error {
	known := slices.Clone(scrapeLabels)
	for _, name := range metricName.FindAllString(expr, -1) {
		base := name
		for _, s := range histSuffixes {
			if b, ok := strings.CutSuffix(name, s); ok && labels[b] != nil {
				base = b
			}
		}
		known = append(known, labels[base]...)
		if strings.HasSuffix(name, "_bucket") {
			known = append(known, "le")
		}
	}
	var used []string
	for _, m := range byClause.FindAllStringSubmatch(expr, -1) {
		used = append(used, strings.Split(m[1], ",")...)
	}
	for _, m := range selector.FindAllStringSubmatch(expr, -1) {
		for _, l := range matcherLabel.FindAllStringSubmatch(m[2], -1) {
			used = append(used, l[1])
		}
	}
	for _, l := range used {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(known, l) {
			return fmt.Errorf("uses label %s, which none of its metrics has in docs/metrics.md", l)
		}
	}
	return nil
}

// dashboardMetric returns the documented metric an expression's name stands
// for: the name itself, or a histogram's with its _bucket, _sum or _count
// suffix removed.
func dashboardMetric(name, doc string) (string, bool) {
	if strings.Contains(doc, "`"+name+"`") {
		return name, true
	}
	for _, s := range histSuffixes {
		base, ok := strings.CutSuffix(name, s)
		if ok && strings.Contains(doc, "`"+base+"` | histogram") {
			return base, true
		}
	}
	return "", false
}

// checkExpr returns what is wrong with the metrics of one panel query: one
// docs/metrics.md does not document (or a suffix on a metric that is not a
// histogram), or one the code does not register. It returns the documented
// metrics the query reads. parseQueries checks the PromQL itself.
func checkExpr(expr, doc string, code map[string]string) ([]string, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("empty query")
	}
	var used []string
	for _, name := range metricName.FindAllString(expr, -1) {
		base, ok := dashboardMetric(name, doc)
		if !ok {
			return nil, fmt.Errorf("reads %s, which docs/metrics.md does not document", name)
		}
		if !registered(code, name) {
			return nil, fmt.Errorf("reads %s, which no service or package registers", name)
		}
		used = append(used, base)
	}
	if len(used) == 0 {
		return nil, fmt.Errorf("reads no onceflow metric")
	}
	return used, nil
}

// parseQueries has promtool parse each query, as the expression of a
// recording rule in a file of its own, with Grafana's $__rate_interval as
// 5m: an error names the queries PromQL refuses.
func parseQueries(t *testing.T, exprs []string) error {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install it with `apt-get install -y --no-install-recommends prometheus` (.ci/run does this)")
	}
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	rules := make([]rule, len(exprs))
	for i, e := range exprs {
		rules[i] = rule{Record: fmt.Sprintf("dashboard:query_%d", i), Expr: strings.ReplaceAll(e, "$__rate_interval", "5m")}
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dashboard.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "check", "rules", file).CombinedOutput(); err != nil {
		return fmt.Errorf("promtool check rules: %v\n%s", err, out)
	}
	return nil
}

// The dashboard's every query is valid PromQL (promtool parses it), reads
// only metrics docs/metrics.md documents and the code registers, and groups
// and matches only on labels they have; and it
// covers the four stages, their latency and the end-to-end one, the cases,
// the provider and the dead-letter queues.
func TestDashboardQueriesDocumentedMetrics(t *testing.T) {
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(readRepoFile(t, "deploy/grafana/onceflow.json")))
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	doc := readRepoFile(t, "docs/metrics.md")
	code := codeMetrics(t)
	labels := documentedLabels(doc)
	used := map[string]bool{}
	ids := map[int]bool{}
	var exprs []string
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
			}
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, q := range p.Targets {
				exprs = append(exprs, q.Expr)
				if err := checkLabels(q.Expr, labels); err != nil {
					t.Errorf("panel %q query %s: %v: %s", p.Title, q.RefID, err, q.Expr)
				}
				ms, err := checkExpr(q.Expr, doc, code)
				if err != nil {
					t.Errorf("panel %q query %s: %v: %s", p.Title, q.RefID, err, q.Expr)
				}
				for _, m := range ms {
					used[m] = true
				}
			}
		}
	}
	walk(d.Panels)
	if err := parseQueries(t, exprs); err != nil {
		t.Error(err)
	}
	for _, m := range []string{
		"onceflow_ingest_receipts_total", "onceflow_ingest_apply_total", "onceflow_ingest_apply_seconds",
		"onceflow_relay_published_total", "onceflow_relay_batch_seconds",
		"onceflow_invoicer_emission_outcomes_total", "onceflow_invoicer_provider_call_seconds",
		"onceflow_cases_open", "onceflow_case_oldest_open_age_seconds",
		"onceflow_invoicer_time_to_valid_document_seconds", "onceflow_dead_letter_messages",
	} {
		if !used[m] {
			t.Errorf("no panel reads %s", m)
		}
	}
}

// The query checks catch what they claim to: a typo in a metric, a suffix
// on a metric that is not a histogram, a documented metric no code
// registers, no metric at all; a label its metrics lack; and PromQL that
// does not parse.
func TestDashboardQueryCheckRejects(t *testing.T) {
	doc := readRepoFile(t, "docs/metrics.md") + "\n| `onceflow_only_in_the_docs_total` | counter | | |\n"
	code := codeMetrics(t)
	for _, expr := range []string{
		"sum(rate(onceflow_ingest_receipt_total[5m]))",
		"onceflow_ingest_receipts_total_count",
		"sum(rate(onceflow_only_in_the_docs_total[5m]))",
		"up",
	} {
		if _, err := checkExpr(expr, doc, code); err == nil {
			t.Errorf("accepted %s", expr)
		}
	}
	good := `histogram_quantile(0.9, sum by (le) (rate(onceflow_ingest_apply_seconds_bucket{pod="(]"}[$__rate_interval])))`
	if _, err := checkExpr(good, doc, code); err != nil {
		t.Errorf("refused a good query: %v", err)
	}
	labels := documentedLabels(doc)
	if err := checkLabels(good, labels); err != nil {
		t.Errorf("refused a good query's labels: %v", err)
	}
	for _, expr := range []string{
		"sum by (queues) (rate(onceflow_relay_published_total[5m]))",
		`sum(rate(onceflow_invoicer_provider_call_seconds_count{reslt="error"}[5m]))`,
		"sum by (le) (rate(onceflow_ingest_apply_seconds_count[5m]))",
	} {
		if err := checkLabels(expr, labels); err == nil {
			t.Errorf("accepted the labels of %s", expr)
		}
	}
	if err := parseQueries(t, []string{good}); err != nil {
		t.Errorf("promtool refused a good query: %v", err)
	}
	for _, expr := range []string{
		"sum(rat(onceflow_ingest_receipts_total[5m]))",
		"sum(rate(onceflow_ingest_receipts_total[5m])",
		`onceflow_cases_open{kind="x}`,
	} {
		if err := parseQueries(t, []string{good, expr}); err == nil {
			t.Errorf("promtool accepted %s", expr)
		}
	}
}
