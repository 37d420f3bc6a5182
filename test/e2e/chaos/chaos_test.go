package chaos

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// TestMain builds the binaries once for every stack the tests start.
func TestMain(m *testing.M) { os.Exit(stack.ShareBuild(m.Run)) }

// logWriter sends progress lines to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ciProfile is the chaos run `make test` keeps forever: 300 payments spread
// over dLocal, Stripe and Mercado Pago, five SIGKILLs, one SQS restart that
// loses its messages and one PostgreSQL crash, with the default PSP faults
// in every PSP sandbox and a few of each business fault (mismatched and
// second payments, chargebacks, rejected and refused invoices).
func ciProfile() Config {
	cfg := Defaults()
	cfg.PSPs = stack.PSPs
	cfg.Payments, cfg.Kills, cfg.KillEvery, cfg.Quiesce = 300, 5, 3*time.Second, 3*time.Minute
	cfg.MismatchShare, cfg.DoublePayShare, cfg.RefuseShare, cfg.ChargebackShare = 0.02, 0.02, 0.02, 0.02
	return cfg
}

func TestChaosCIProfile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cfg := ciProfile()
	cfg.Dir = t.TempDir()
	res, err := Run(ctx, cfg, logWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res, res.ByAction, res.ByPSP)
	if !res.OK() {
		t.Fatalf("%s\nproblems:\n%s", res, strings.Join(res.Problems, "\n"))
	}
	if res.Payments <= cfg.Payments || res.Cases == 0 || res.Rejected == 0 || res.Kills != cfg.Kills || res.SQSRestarts != 1 || res.PGRestarts != 1 {
		t.Fatalf("the run did not do what the profile says (second payments, cases, rejections): %s rejected=%d", res, res.Rejected)
	}
	if res.Chargebacks == 0 || res.ByAction["chargeback/acknowledge"] != res.Chargebacks {
		t.Fatalf("chargebacks=%d, cases %v: want some, each a chargeback case the operator acknowledged", res.Chargebacks, res.ByAction)
	}
	if res.Documents != res.Payments+res.Refunds {
		t.Fatalf("documents = %d, want one per payment and refund (%d)", res.Documents, res.Payments+res.Refunds)
	}
	for _, psp := range cfg.PSPs {
		if got := res.ByPSP[psp]; got.Sources < cfg.Payments/len(cfg.PSPs) || got.Documents != got.Sources {
			t.Fatalf("%s: %+v, want its share of the payments, each with one document", psp, got)
		}
	}
}

// The checker can fail: a document planted at the fiscal sandbox behind
// onceflow's back is a duplicate, one dropped from it is missing, and a
// case no operator closed (a chargeback of a payment the harness never
// charged back) is open.
func TestCheckerCatchesPlantedAndDroppedDocuments(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cfg := Defaults()
	cfg.Payments, cfg.RefundShare, cfg.Kills, cfg.SQSRestarts, cfg.PGRestarts = 10, 0, 0, 0, 0
	cfg.MismatchShare, cfg.DoublePayShare, cfg.RefuseShare, cfg.ChargebackShare = 0, 0, 0, 0
	cfg.KillEvery, cfg.Dir = 200*time.Millisecond, t.TempDir()
	tamper := func(ctx context.Context, s *stack.Stack) error {
		docs, err := s.Documents(ctx)
		if err != nil || len(docs) < 2 {
			return fmt.Errorf("documents to tamper with: %d (%v)", len(docs), err)
		}
		planted := map[string]any{"reference": "999999999999", "type": docs[0].Type, "total": "1.00", "addendum": docs[0].Addendum}
		if err := s.Sandbox(ctx, http.MethodPost, "/sandbox/documents", planted); err != nil {
			return err
		}
		if err := s.Sandbox(ctx, http.MethodDelete, "/sandbox/documents/"+docs[1].Reference, nil); err != nil {
			return err
		}
		return openCase(ctx, s)
	}
	res, err := runWith(ctx, cfg, logWriter{t}, tamper)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || res.Duplicates != 1 || res.Missing != 1 || res.Open != 1 || res.Closed != res.Cases-1 {
		t.Fatalf("%s: want duplicates=1 missing=1 open=1 and a failed run", res)
	}
}

// openCase opens a chargeback case at ingest, as its apply worker would.
func openCase(ctx context.Context, s *stack.Stack) error {
	conn, err := pgx.Connect(ctx, s.Database)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO ingest.cases (kind, subject, psp, psp_payment_id, amount_minor, currency)
		VALUES ('chargeback', 'payment:planted', 'dlocal', 'planted', 100, 'UYU')`)
	return err
}
