package sweep_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/services/reconciler/internal/pspaudit"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

// keys are the event keys of evs, sorted as DB.Due returns them.
func keys(evs ...reconcilertest.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Key
	}
	sort.Strings(out)
	return out
}

func TestSweep(t *testing.T) {
	t.Parallel()
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	recent := time.Now().Add(-time.Minute)

	tests := []struct {
		name      string
		pageSize  int
		maxPerRun int
		seed      func(testing.TB, *reconcilertest.DB)
		want      sweep.Result
		wantDue   []string // the outbox rows ingest made due again
	}{{
		name: "old payment without invoice has ingest announce its event again",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", old)
			db.Outbox(tb, reconcilertest.PaymentPaid("p1"))
		},
		want:    sweep.Result{Checked: 1, Missing: 1, Republished: 1},
		wantDue: keys(reconcilertest.PaymentPaid("p1")),
	}, {
		name: "old payment whose event is parked is left to ingest's case",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", old)
			db.Outbox(tb, reconcilertest.PaymentPaid("p1"))
			db.Exec(tb, `UPDATE ingest.outbox SET published_at = NULL, parked_at = now(), parked_reason = 'refused'`)
		},
		want: sweep.Result{Checked: 1, Missing: 1, Parked: 1},
	}, {
		name: "old payment with its invoice is left alone",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", old)
			db.Outbox(tb, reconcilertest.PaymentPaid("p1"))
			db.Invoice(tb, "p1")
		},
		want: sweep.Result{Checked: 1, Streamed: 1},
	}, {
		name: "payment paid within the grace period is left alone",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", recent)
			db.Outbox(tb, reconcilertest.PaymentPaid("p1"))
		},
		want: sweep.Result{},
	}, {
		name: "unpaid payment is left alone",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", time.Time{})
		},
		want: sweep.Result{},
	}, {
		name: "old refund without credit note has ingest announce its event again",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", old)
			db.Invoice(tb, "p1")
			db.Refund(tb, "r1", "p1", old)
			db.Outbox(tb, reconcilertest.RefundSucceeded("r1"))
		},
		want:    sweep.Result{Checked: 2, Streamed: 1, Missing: 1, Republished: 1},
		wantDue: keys(reconcilertest.RefundSucceeded("r1")),
	}, {
		name: "old refund with its credit note is left alone",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", old)
			db.Invoice(tb, "p1")
			db.Refund(tb, "r1", "p1", old)
			db.Outbox(tb, reconcilertest.RefundSucceeded("r1"))
			db.CreditNote(tb, "r1", "p1")
		},
		want: sweep.Result{Checked: 2, Streamed: 2},
	}, {
		name: "pending refund is left alone",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", old)
			db.Invoice(tb, "p1")
			db.Refund(tb, "r1", "p1", time.Time{})
		},
		want: sweep.Result{Checked: 1, Streamed: 1},
	}, {
		name: "paid payment without outbox row is a missing event",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", old)
		},
		want: sweep.Result{Checked: 1, Missing: 1, MissingEvents: 1},
	}, {
		name:     "pages through payments paid at the same instant",
		pageSize: 2,
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			for i := range 5 {
				id := fmt.Sprintf("p%d", i)
				db.Payment(tb, id, old)
				db.Outbox(tb, reconcilertest.PaymentPaid(id))
			}
			db.Invoice(tb, "p2")
		},
		want: sweep.Result{Checked: 5, Streamed: 1, Missing: 4, Republished: 4},
		wantDue: keys(reconcilertest.PaymentPaid("p0"), reconcilertest.PaymentPaid("p1"),
			reconcilertest.PaymentPaid("p3"), reconcilertest.PaymentPaid("p4")),
	}, {
		name:      "stops at the per-run maximum",
		maxPerRun: 2,
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			for i := range 3 {
				id := fmt.Sprintf("p%d", i)
				db.Payment(tb, id, old.Add(time.Duration(i)*time.Second))
				db.Outbox(tb, reconcilertest.PaymentPaid(id))
			}
		},
		want:    sweep.Result{Checked: 3, Missing: 2, Republished: 2, Capped: true},
		wantDue: keys(reconcilertest.PaymentPaid("p0"), reconcilertest.PaymentPaid("p1")),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := reconcilertest.NewDB(t)
			tt.seed(t, db)
			ingest := reconcilertest.NewIngest(t, db.Pool)
			cfg := sweep.Config{Grace: 10 * time.Minute, PageSize: 500, MaxPerRun: 5000, Overlap: time.Hour}
			if tt.pageSize > 0 {
				cfg.PageSize = tt.pageSize
			}
			if tt.maxPerRun > 0 {
				cfg.MaxPerRun = tt.maxPerRun
			}
			reg := prometheus.NewRegistry()
			s := sweep.New(store.NewIngestReader(db.Pool), store.NewInvoicerReader(db.Pool), ingest.Client(), cfg, zaptest.NewLogger(t), sweep.NewMetrics(reg))

			got, err := s.Run(context.Background(), store.New(db.Pool))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !tt.want.Capped {
				tt.want.Cases = tt.want.Missing // each missing one opens its case
			} else {
				tt.want.Cases = tt.want.Republished
			}
			if got != tt.want {
				t.Errorf("Run = %+v, want %+v", got, tt.want)
			}
			if tt.wantDue == nil {
				tt.wantDue = []string{}
			}
			if due := db.Due(t); !reflect.DeepEqual(due, tt.wantDue) {
				t.Errorf("ingest's outbox has %v due again, want %v", due, tt.wantDue)
			}
			assertCounter(t, reg, "onceflow_reconciler_republished_total", tt.want.Republished)
			assertCounter(t, reg, "onceflow_reconciler_missing_events_total", tt.want.MissingEvents)
			assertPassesTimed(t, reg)
		})
	}
}

// assertPassesTimed checks that the run recorded one time for each pass,
// and some time for the recent pass, which always reads.
func assertPassesTimed(tb testing.TB, reg *prometheus.Registry) {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	runs, seconds := map[string]uint64{}, map[string]float64{}
	for _, f := range families {
		if f.GetName() != "onceflow_reconciler_sweep_pass_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			pass := m.GetLabel()[0].GetValue()
			runs[pass], seconds[pass] = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
		}
	}
	if want := map[string]uint64{"recent": 1, "full": 1}; !reflect.DeepEqual(runs, want) {
		tb.Errorf("pass durations observed %v times, want %v", runs, want)
	}
	if seconds["recent"] <= 0 {
		tb.Errorf("recent pass took %v s, want some time", seconds["recent"])
	}
}

func assertCounter(tb testing.TB, reg *prometheus.Registry, name string, want int) {
	tb.Helper()
	got, ok := reconcilertest.Metric(tb, reg, name)
	switch {
	case !ok:
		tb.Errorf("%s not registered", name)
	case got != float64(want):
		tb.Errorf("%s = %v, want %d", name, got, want)
	}
}

// TestSweepAcrossDatabases keeps ingest and invoicer in different databases,
// as production may: the sweep must not rely on a join between them.
func TestSweepAcrossDatabases(t *testing.T) {
	t.Parallel()
	ingest, invoicer := reconcilertest.NewDB(t), reconcilertest.NewDB(t)
	old := time.Now().Add(-time.Hour)
	for _, id := range []string{"p1", "p2"} {
		ingest.Payment(t, id, old)
		ingest.Outbox(t, reconcilertest.PaymentPaid(id))
	}
	invoicer.Invoice(t, "p1")
	cfg := sweep.Config{Grace: 10 * time.Minute, PageSize: 500, MaxPerRun: 5000, Overlap: time.Hour}
	s := sweep.New(store.NewIngestReader(ingest.Pool), store.NewInvoicerReader(invoicer.Pool), reconcilertest.NewIngest(t, ingest.Pool).Client(), cfg,
		zaptest.NewLogger(t), sweep.NewMetrics(prometheus.NewRegistry()))

	got, err := s.Run(context.Background(), store.New(ingest.Pool))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := (sweep.Result{Checked: 2, Streamed: 1, Missing: 1, Republished: 1, Cases: 1}); got != want {
		t.Errorf("Run = %+v, want %+v", got, want)
	}
	if due, want := ingest.Due(t), keys(reconcilertest.PaymentPaid("p2")); !reflect.DeepEqual(due, want) {
		t.Errorf("ingest's outbox has %v due again, want %v", due, want)
	}
}

// TestSweepAsksIngestManyKeysPerRequest checks the sweep asks for the
// missing documents' events in batches of at most pspaudit.MaxRepublish
// keys (ingest answers 400 to more): 250 missing payments take three
// requests, and each event is due again.
func TestSweepAsksIngestManyKeysPerRequest(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	old := time.Now().Add(-time.Hour)
	const n = 2*pspaudit.MaxRepublish + 50
	var want []reconcilertest.Event
	for i := range n {
		id := fmt.Sprintf("p%03d", i)
		db.Payment(t, id, old.Add(time.Duration(i)*time.Millisecond))
		ev := reconcilertest.PaymentPaid(id)
		db.Outbox(t, ev)
		want = append(want, ev)
	}
	ingest := reconcilertest.NewIngest(t, db.Pool)
	cfg := sweep.Config{Grace: 10 * time.Minute, PageSize: 500, MaxPerRun: 5000, Overlap: time.Hour}
	s := sweep.New(store.NewIngestReader(db.Pool), store.NewInvoicerReader(db.Pool), ingest.Client(), cfg,
		zaptest.NewLogger(t), sweep.NewMetrics(prometheus.NewRegistry()))

	got, err := s.Run(context.Background(), store.New(db.Pool))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := (sweep.Result{Checked: n, Missing: n, Republished: n, Cases: n}); got != want {
		t.Errorf("Run = %+v, want %+v", got, want)
	}
	if hits := ingest.Hits(); hits != 3 {
		t.Errorf("ingest was asked %d times, want 3 (100, 100 and 50 keys)", hits)
	}
	if due := db.Due(t); !reflect.DeepEqual(due, keys(want...)) {
		t.Errorf("ingest's outbox has %d events due again, want the %d", len(due), n)
	}
}
