package sweep_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/services/reconciler/internal/pspaudit"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

// newSweeper is a sweep over db asking a fake ingest admin API, which it
// returns, and its registry.
func newSweeper(tb testing.TB, db *reconcilertest.DB, cfg sweep.Config) (*sweep.Sweeper, *reconcilertest.Ingest, *prometheus.Registry) {
	tb.Helper()
	ingest := reconcilertest.NewIngest(tb, db.Pool)
	cfg.Grace, cfg.PageSize, cfg.MaxPerRun = 10*time.Minute, max(cfg.PageSize, 2), 5000
	if cfg.Overlap == 0 {
		cfg.Overlap = time.Hour // the tests' payments, an hour old, are the first run's recent pass
	}
	reg := prometheus.NewRegistry()
	return sweep.New(store.NewIngestReader(db.Pool), store.NewInvoicerReader(db.Pool), ingest.Client(), cfg, zaptest.NewLogger(tb), sweep.NewMetrics(reg)), ingest, reg
}

// openFinding returns the seen count of the open finding of kind and
// reference, 0 when there is none.
func openFinding(tb testing.TB, db *reconcilertest.DB, kind, reference string) int {
	tb.Helper()
	var n int
	err := db.Pool.QueryRow(context.Background(), `SELECT coalesce(max(seen_count), 0) FROM reconciler.findings
WHERE kind = $1 AND reference = $2 AND closed_at IS NULL`, kind, reference).Scan(&n)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// An event ingest fails to announce again becomes a finding and the run
// goes on: the rows after it are still asked for. Each run tries it again,
// and the finding closes once its document exists.
func TestSweepRefusedEventIsAFindingAndTheRunGoesOn(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	old := time.Now().Add(-time.Hour)
	for i := 0; i <= 2; i++ {
		id := fmt.Sprintf("p%d", i)
		db.Payment(t, id, old.Add(time.Duration(i)*time.Second))
		db.Outbox(t, reconcilertest.PaymentPaid(id))
	}
	s, ingest, reg := newSweeper(t, db, sweep.Config{})
	ingest.Refuse("payment:p0:paid")
	own := store.New(db.Pool)

	got, err := s.Run(context.Background(), own)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := (sweep.Result{Checked: 3, Missing: 3, Republished: 2, Failed: 1, Cases: 3}); got != want {
		t.Errorf("Run = %+v, want %+v", got, want)
	}
	if due, want := db.Due(t), keys(reconcilertest.PaymentPaid("p1"), reconcilertest.PaymentPaid("p2")); !reflect.DeepEqual(due, want) {
		t.Errorf("ingest's outbox has %v due again, want %v", due, want)
	}
	assertCounter(t, reg, "onceflow_reconciler_republish_failures_total", 1)
	if n := openFinding(t, db, sweep.KindRepublishFailed, "payment:p0:paid"); n != 1 {
		t.Fatalf("open republish_failed finding seen %d times, want 1", n)
	}
	// The refused send feeds p0's missing_document case.
	var event string
	if err := db.Pool.QueryRow(context.Background(), `SELECT evidence->>'event' FROM reconciler.cases
WHERE kind = 'missing_document' AND subject = 'payment:p0' AND closed_at IS NULL`).Scan(&event); err != nil || event != "send_failed" {
		t.Errorf("p0's missing_document case says event %q (%v), want send_failed", event, err)
	}

	// The next run tries it again: still refused, still open.
	if _, err := s.Run(context.Background(), own); err != nil {
		t.Fatalf("second Run: %v", err)
	}
	if n := openFinding(t, db, sweep.KindRepublishFailed, "payment:p0:paid"); n != 2 {
		t.Fatalf("after a second refusal the finding is seen %d times, want 2 (open)", n)
	}
	// Its document appears (an operator issued it): the next run closes it.
	db.Invoice(t, "p0")
	if _, err := s.Run(context.Background(), own); err != nil {
		t.Fatalf("third Run: %v", err)
	}
	if n := openFinding(t, db, sweep.KindRepublishFailed, "payment:p0:paid"); n != 0 {
		t.Fatal("the finding stays open although the document exists")
	}
}

// After a complete pass, a run reads only what became final since (its
// recent pass), plus one bounded slice of older history (its full pass);
// a payment older than the watermark whose document is missing is still
// found within the full pass's slices.
func TestSweepWatermarkReadsOnlyNewRowsAndTheFullPassFindsOldOnes(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	const history, slice = 20, 5
	old := time.Now().Add(-3 * time.Hour)
	for i := range history {
		id := fmt.Sprintf("h%02d", i)
		db.Payment(t, id, old.Add(time.Duration(i)*time.Second))
		db.Invoice(t, id)
	}
	s, _, _ := newSweeper(t, db, sweep.Config{Overlap: time.Hour, FullSlice: slice, PageSize: 2})
	own := store.New(db.Pool)
	// A first run has no watermark: its recent pass starts an overlap
	// before the cutoff and the full pass takes the rest a slice a time;
	// the pass is complete once the full pass has finished once.
	for runs := 0; ; runs++ {
		if _, err := s.Run(context.Background(), own); err != nil {
			t.Fatal(err)
		}
		if st, err := own.SweepState(context.Background(), "payment"); err != nil || st.FullPasses > 0 {
			break
		}
		if runs > history/slice+1 {
			t.Fatal("the full pass never finished")
		}
	}

	// Two new payments without their invoice, past the grace period, and
	// one paid long ago that no earlier run saw (its paid_at written late,
	// as a repair does): older than the watermark minus the overlap.
	for _, id := range []string{"n1", "n2"} {
		db.Payment(t, id, time.Now().Add(-15*time.Minute))
		db.Outbox(t, reconcilertest.PaymentPaid(id))
	}
	db.Payment(t, "late", time.Now().Add(-2*time.Hour))
	db.Outbox(t, reconcilertest.PaymentPaid("late"))

	got, err := s.Run(context.Background(), own)
	if err != nil {
		t.Fatal(err)
	}
	if recent := got.Checked - got.FullChecked; recent != 2 || got.FullChecked > slice {
		t.Fatalf("run after a complete pass read %d recent rows and %d of history (%+v), want the 2 new and at most %d",
			recent, got.FullChecked, got, slice)
	}
	found := got.Republished == 3
	for runs := 0; !found; runs++ {
		if runs > (history+1)/slice+1 {
			t.Fatal("the full pass never found the old payment without its invoice")
		}
		got, err := s.Run(context.Background(), own)
		if err != nil {
			t.Fatal(err)
		}
		if recent := got.Checked - got.FullChecked; recent != 2 || got.FullChecked > slice {
			t.Fatalf("a later run read %d recent rows and %d of history, want 2 and at most %d", recent, got.FullChecked, slice)
		}
		found = got.Republished == 3
	}
}

// Ingest refusing the reconciler's token is no refused event: the run
// stops with an error, reports what it had done so far and opens no
// finding.
func TestSweepRefusedTokenEndsTheRun(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	db.Payment(t, "p1", time.Now().Add(-time.Hour))
	db.Outbox(t, reconcilertest.PaymentPaid("p1"))
	ingest := reconcilertest.NewIngest(t, db.Pool)
	cfg := sweep.Config{Grace: 10 * time.Minute, PageSize: 500, MaxPerRun: 5000, Overlap: time.Hour}
	s := sweep.New(store.NewIngestReader(db.Pool), store.NewInvoicerReader(db.Pool),
		pspaudit.NewIngestAdmin(ingest.URL, "not-the-token", http.DefaultClient), cfg, zaptest.NewLogger(t), sweep.NewMetrics(prometheus.NewRegistry()))

	got, err := s.Run(context.Background(), store.New(db.Pool))
	if err == nil {
		t.Fatal("Run succeeded although ingest refused its token")
	}
	if want := (sweep.Result{Checked: 1, Missing: 1}); got != want {
		t.Errorf("Run = %+v, want %+v", got, want)
	}
	if n := openFinding(t, db, sweep.KindRepublishFailed, "payment:p1:paid"); n != 0 {
		t.Errorf("a refused token opened a republish_failed finding")
	}
}

// Ten refused events in a row end a run (ingest looks down), but the
// ones it recorded are only retried by the next, which goes past them: a
// run never keeps stopping at the same rows.
func TestSweepManyRefusedEventsDoNotStopEveryRun(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	old := time.Now().Add(-time.Hour)
	s, ingest, _ := newSweeper(t, db, sweep.Config{})
	for i := range 12 {
		id := fmt.Sprintf("p%02d", i)
		ev := reconcilertest.PaymentPaid(id)
		if i < 11 {
			ingest.Refuse(ev.Key)
		}
		db.Payment(t, id, old.Add(time.Duration(i)*time.Second))
		db.Outbox(t, ev)
	}
	own := store.New(db.Pool)
	if _, err := s.Run(context.Background(), own); err == nil {
		t.Fatal("ten refused sends in a row did not end the run")
	}
	for run := 2; run <= 3; run++ {
		got, err := s.Run(context.Background(), own)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if got.Failed != 11 {
			t.Errorf("run %d refused %d events, want the 11 once each (%+v)", run, got.Failed, got)
		}
	}
	if due, want := db.Due(t), keys(reconcilertest.PaymentPaid("p11")); !reflect.DeepEqual(due, want) {
		t.Errorf("ingest's outbox has %v due again, want %v", due, want)
	}
}

// A run does not look up again the rows of its overlap that the previous
// run found with a valid document; a row found without one is looked up
// every run, and a new Sweeper (a restarted process) looks every row up.
func TestSweepLooksUpAValidDocumentOnce(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	paid := time.Now().Add(-20 * time.Minute) // past the grace, within the hour of overlap
	for _, id := range []string{"v1", "v2"} {
		db.Payment(t, id, paid)
		db.Invoice(t, id)
	}
	db.Payment(t, "m1", paid)
	db.Outbox(t, reconcilertest.PaymentPaid("m1"))
	own := store.New(db.Pool)
	run := func(s *sweep.Sweeper) sweep.Result {
		t.Helper()
		got, err := s.Run(context.Background(), own)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	s, _, reg := newSweeper(t, db, sweep.Config{})
	if got := run(s); got.Checked != 3 || got.Known != 0 || got.Missing != 1 {
		t.Fatalf("first run: %+v, want 3 checked, none known, m1 missing", got)
	}
	for i := range 2 {
		if got := run(s); got.Checked != 3 || got.Known != 2 || got.Missing != 1 {
			t.Fatalf("run %d after: %+v, want 3 checked, v1 and v2 known, m1 looked up and missing again", i+1, got)
		}
	}
	assertCounter(t, reg, "onceflow_reconciler_sweep_known_valid_total", 4)

	restarted, _, _ := newSweeper(t, db, sweep.Config{})
	if got := run(restarted); got.Checked != 3 || got.Known != 0 {
		t.Fatalf("a new sweeper's first run: %+v, want every row looked up", got)
	}
}
