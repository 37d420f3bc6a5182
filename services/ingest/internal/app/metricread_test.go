package app_test

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// metricValue reads the sample of metric name from ingest's /metrics whose
// labels include every label="value" pair of labels (given as name, value,
// ...); ok is false when there is none.
func metricValue(tb testing.TB, e *env, name string, labels ...string) (v float64, ok bool) {
	tb.Helper()
	resp, err := http.Get(e.admin + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		if matchesLabels(line, labels) {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// matchesLabels reports whether a sample line carries every pair.
func matchesLabels(line string, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(line, pairs[i]+`="`+pairs[i+1]+`"`) {
			return false
		}
	}
	return true
}

// gauge reads an unlabelled gauge from ingest's /metrics, failing the test
// when ingest does not export it.
func (e *env) gauge(name string) float64 {
	e.t.Helper()
	v, ok := metricValue(e.t, e, name)
	if !ok {
		e.t.Fatalf("no %s on ingest's /metrics", name)
	}
	return v
}
