package deploy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
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

// promFuncs are the PromQL functions, aggregations and keywords the dashboard
// may call: an identifier followed by "(" that is not one of them is a typo.
var promFuncs = []string{
	"sum", "max", "min", "avg", "count", "topk", "bottomk", "by", "without",
	"rate", "irate", "increase", "delta", "histogram_quantile", "time",
	"clamp_min", "clamp_max", "abs", "vector", "absent", "max_over_time",
	"min_over_time", "avg_over_time", "and", "or", "unless", "on", "ignoring",
}

var (
	callName     = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*\(`)
	histSuffixes = []string{"_bucket", "_sum", "_count"}
)

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

// checkExpr returns what is wrong with one panel query: unbalanced
// delimiters, an unknown function, or a metric docs/metrics.md does not
// document. It returns the documented metrics the query reads.
func checkExpr(expr, doc string) ([]string, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("empty query")
	}
	if err := balanced(expr); err != nil {
		return nil, err
	}
	for _, m := range callName.FindAllStringSubmatch(expr, -1) {
		if !slices.Contains(promFuncs, m[1]) {
			return nil, fmt.Errorf("calls %s(), not a PromQL function this test knows", m[1])
		}
	}
	var used []string
	for _, name := range metricName.FindAllString(expr, -1) {
		base, ok := dashboardMetric(name, doc)
		if !ok {
			return nil, fmt.Errorf("reads %s, which docs/metrics.md does not document", name)
		}
		used = append(used, base)
	}
	if len(used) == 0 {
		return nil, fmt.Errorf("reads no onceflow metric")
	}
	return used, nil
}

// balanced reports unmatched (), [] or {} outside quoted label values.
func balanced(expr string) error {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	quoted := false
	for _, r := range expr {
		switch {
		case r == '"':
			quoted = !quoted
		case quoted:
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pairs[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return fmt.Errorf("unbalanced %q", r)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if quoted || len(stack) > 0 {
		return fmt.Errorf("unclosed %q or quote", string(stack))
	}
	return nil
}

// The dashboard's every query is well formed and reads only documented
// metrics (which TestEveryMetricIsDocumented ties to the code), and it covers
// the four stages, their latency, the cases and the provider.
func TestDashboardQueriesDocumentedMetrics(t *testing.T) {
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(readRepoFile(t, "deploy/grafana/onceflow.json")))
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	doc := readRepoFile(t, "docs/metrics.md")
	used := map[string]bool{}
	ids := map[int]bool{}
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
				ms, err := checkExpr(q.Expr, doc)
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
	for _, m := range []string{
		"onceflow_ingest_receipts_total", "onceflow_ingest_apply_total", "onceflow_ingest_apply_seconds",
		"onceflow_relay_published_total", "onceflow_relay_batch_seconds",
		"onceflow_invoicer_emission_outcomes_total", "onceflow_invoicer_provider_call_seconds",
		"onceflow_cases_open", "onceflow_case_oldest_open_age_seconds",
	} {
		if !used[m] {
			t.Errorf("no panel reads %s", m)
		}
	}
}

// The query check catches what it claims to: a typo in a metric, a suffix on
// a metric that is not a histogram, an unknown function, a missing bracket.
func TestDashboardQueryCheckRejects(t *testing.T) {
	doc := readRepoFile(t, "docs/metrics.md")
	for _, expr := range []string{
		"sum(rate(onceflow_ingest_receipt_total[5m]))",
		"onceflow_ingest_receipts_total_count",
		"sum(rat(onceflow_ingest_receipts_total[5m]))",
		"sum(rate(onceflow_ingest_receipts_total[5m])",
		`onceflow_cases_open{kind="x}`,
		"up",
	} {
		if _, err := checkExpr(expr, doc); err == nil {
			t.Errorf("accepted %s", expr)
		}
	}
	if _, err := checkExpr(`histogram_quantile(0.9, sum by (le) (rate(onceflow_ingest_apply_seconds_bucket{x="(]"}[5m])))`, doc); err != nil {
		t.Errorf("refused a good query: %v", err)
	}
}
