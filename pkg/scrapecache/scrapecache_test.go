package scrapecache

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
)

// source counts its reads and answers n, or fails when err is set.
type source struct {
	desc  *prometheus.Desc
	reads int
	n     float64
	err   error
}

func (s *source) read(context.Context) ([]prometheus.Metric, error) {
	s.reads++
	if s.err != nil {
		return nil, s.err
	}
	return []prometheus.Metric{prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, s.n)}, nil
}

func TestCollectorReadsOncePerIntervalAndOutlivesFailures(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	src := &source{desc: prometheus.NewDesc("onceflow_test_rows", "Rows.", nil, nil), n: 7}
	c := New(src.read, zap.NewNop(), Options{Every: 15 * time.Second, KeepFor: time.Minute, Now: func() time.Time { return now }}, src.desc)
	scrape := func() string {
		t.Helper()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				b.WriteString(mf.GetName() + " " + strings.TrimSuffix(strings.TrimPrefix(m.GetGauge().String(), "value:"), " "))
			}
		}
		return b.String()
	}
	for range 5 {
		if got := scrape(); got != "onceflow_test_rows 7" {
			t.Fatalf("scrape = %q, want onceflow_test_rows 7", got)
		}
	}
	if src.reads != 1 {
		t.Fatalf("5 scrapes within the interval read %d times, want 1", src.reads)
	}
	now, src.n = now.Add(15*time.Second), 8
	if got := scrape(); got != "onceflow_test_rows 8" || src.reads != 2 {
		t.Fatalf("after the interval: scrape %q after %d reads, want the new value from a 2nd read", got, src.reads)
	}
	now, src.err = now.Add(30*time.Second), errors.New("canceling statement due to statement timeout")
	if got := scrape(); got != "onceflow_test_rows 8" {
		t.Fatalf("a failed read within KeepFor: scrape %q, want the last good value", got)
	}
	for range 3 {
		if got := scrape(); got != "onceflow_test_rows 8" || src.reads != 3 {
			t.Fatalf("scrapes within the interval after a failed read: %q after %d reads, want the last good value and no new read", got, src.reads)
		}
	}
	now = now.Add(time.Minute)
	if got := scrape(); got != "" || src.reads != 4 {
		t.Fatalf("a failed read past KeepFor: scrape %q after %d reads, want no series from a 4th read", got, src.reads)
	}
	if n := testutil.CollectAndCount(c); n != 0 || src.reads != 4 {
		t.Fatalf("collected %d series after %d reads, want 0 and no new read", n, src.reads)
	}
	now, src.err, src.n = now.Add(15*time.Second), nil, 9
	if got := scrape(); got != "onceflow_test_rows 9" || src.reads != 5 {
		t.Fatalf("a read that succeeds again: scrape %q after %d reads, want the value from a 5th read", got, src.reads)
	}
}
