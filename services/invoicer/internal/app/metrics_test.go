package app

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// mix is how many documents of each status seed puts in every 1,000.
var mix = map[fiscal.Status]int{
	fiscal.StatusAuthorized: 960, fiscal.StatusRejected: 10, fiscal.StatusVoided: 5, fiscal.StatusIssued: 5,
	fiscal.StatusPending: 10, fiscal.StatusUnknown: 3, fiscal.StatusPendingDGI: 4, fiscal.StatusNeedsAttention: 3,
}

// seed copies n documents (n a multiple of 1,000) in mix's proportions and
// analyzes the table, as autovacuum would.
func seed(tb testing.TB, pool *pgxpool.Pool, n int) {
	tb.Helper()
	var statuses []fiscal.Status
	for st, k := range mix {
		for range k {
			statuses = append(statuses, st)
		}
	}
	i := 0
	rows := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		i++
		ref := strconv.Itoa(i)
		return []any{"payment", "seed-" + ref, "invoice", "seed-" + ref, ref, 101, string(statuses[i%len(statuses)]), int64(1000), "UYU", []byte("{}"), time.Now().Add(time.Hour)}, nil
	})
	cols := []string{"source_kind", "source_ref", "kind", "event_key", "reference", "cfe_type", "status", "amount_minor", "currency", "buyer", "due_at"}
	if _, err := pool.CopyFrom(context.Background(), pgx.Identifier{"invoicer", "fiscal_documents"}, cols, rows); err != nil {
		tb.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), "ANALYZE invoicer.fiscal_documents"); err != nil {
		tb.Fatal(err)
	}
}

// byStatus reads the collector's onceflow_invoicer_documents by status.
func byStatus(tb testing.TB, c prometheus.Collector) map[string]float64 {
	tb.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "onceflow_invoicer_documents" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[label(m, "status")] = m.GetGauge().GetValue()
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Above exactUpTo the open statuses stay exact and the final ones come
// from the statistics (exact here: ANALYZE samples all of a small table);
// below it every status is counted.
func TestDocumentMetricsCountOpenStatusesExactlyAtAnySize(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	seed(t, env.Pool, 2000)
	for _, limit := range []int64{100, exactUpTo} {
		t.Run(fmt.Sprintf("exact_up_to_%d", limit), func(t *testing.T) {
			got := byStatus(t, newDocuments(store.New(env.Pool), limit).cached(zaptest.NewLogger(t), time.Nanosecond))
			for st, k := range mix {
				want, n := float64(2*k), got[string(st)]
				if n != want && (limit == exactUpTo || !isFinal(st) || math.Abs(n-want) > 0.05*want+1) {
					t.Errorf("status %s: %v documents, want %v", st, n, want)
				}
			}
		})
	}
}

func isFinal(st fiscal.Status) bool {
	for _, f := range finalStatuses {
		if f == st {
			return true
		}
	}
	return false
}

// BenchmarkDocumentMetrics1M measures one scrape of the document metrics
// over 1,000,000 documents: the GROUP BY over every row each scrape ran
// before, one bounded read (what a scrape costs once per interval now) and
// a scrape answered from the last read (the others of the interval). Run
// it alone:
//
//	go test -run '^$' -bench DocumentMetrics1M -benchtime 1x ./services/invoicer/internal/app/
func BenchmarkDocumentMetrics1M(b *testing.B) {
	env := invoicertest.New(b)
	start := time.Now()
	seed(b, env.Pool, 1_000_000)
	b.Logf("seeded 1,000,000 documents in %v", time.Since(start).Round(time.Millisecond))
	st := store.New(env.Pool)
	ctx := context.Background()
	b.Run("group_by_every_row", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.CountByStatus(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := st.DueStats(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bounded_read", func(b *testing.B) {
		coll := newDocuments(st, exactUpTo).cached(zaptest.NewLogger(b), time.Nanosecond) // a read each scrape
		for b.Loop() {
			if got := byStatus(b, coll); got[string(fiscal.StatusPending)] != 10_000 {
				b.Fatalf("pending = %v, want 10000", got[string(fiscal.StatusPending)])
			}
		}
	})
	b.Run("cached_scrape", func(b *testing.B) {
		coll := newDocumentCollector(st, zap.NewNop(), time.Hour)
		byStatus(b, coll) // the read the interval's other scrapes share
		for b.Loop() {
			byStatus(b, coll)
		}
	})
}
