// Package pspaudit checks ingest's ledger against the PSPs' own records:
// for a period it lists the payments every PSP holds (through ingest's
// admin API, since ingest holds the adapters) and compares them with what
// ingest recorded, read through the read-only ingest connection. A payment
// that moved money (PAID, or charged back) that ingest never recorded, or
// recorded in another status, is recovered through the webhook path (ingest
// re-fetches it and applies it as its webhook) when its order is
// identifiable; otherwise it is a finding and an audit_disagreement case.
// A recorded payment whose money differs from the PSP's is a finding too.
package pspaudit

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// Finding kinds the PSP audit reports.
const (
	// UnknownOrder: the PSP holds a payment that moved money, ingest has no
	// record of it, and its order reference names no order ingest holds.
	UnknownOrder = "psp_audit_unknown_order"
	// AmountMismatch: ingest recorded the payment with other money than
	// the PSP holds.
	AmountMismatch = "psp_audit_amount_mismatch"
)

// Kinds are every kind a PSP audit run checks.
var Kinds = []string{UnknownOrder, AmountMismatch}

// moved are the normalized statuses of a payment that took money.
var moved = map[string]bool{"PAID": true, "CHARGEBACK": true}

// Ingest is what the audit asks of ingest's admin API.
type Ingest interface {
	Payments(ctx context.Context, from, to time.Time) ([]Payment, error)
	Recover(ctx context.Context, psp, id string) (recorded bool, err error)
}

// Config sets the period: the payments created from Window before a run to
// Settle before it (the webhook and the poller have their chance first).
type Config struct {
	Window time.Duration
	Settle time.Duration
}

// Auditor is the PSP audit, a reconcile.CaseChecker.
type Auditor struct {
	ingest    Ingest
	records   *store.IngestReader
	cfg       Config
	log       *zap.Logger
	recovered *prometheus.CounterVec
}

// New returns the audit; it registers its counter with reg.
func New(ingest Ingest, records *store.IngestReader, cfg Config, log *zap.Logger, reg prometheus.Registerer) *Auditor {
	a := &Auditor{ingest: ingest, records: records, cfg: cfg, log: log,
		recovered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_reconciler_psp_recovered_total",
			Help: "PSP payments the PSP audit found ingest had not recorded and sent back through the webhook path, by outcome (recorded, already_recorded).",
		}, []string{"outcome"})}
	reg.MustRegister(a.recovered)
	return a
}

// Name implements reconcile.Checker.
func (a *Auditor) Name() string { return "psp_audit" }

// Kinds implements reconcile.Checker.
func (a *Auditor) Kinds() []string { return Kinds }

// CaseKind makes each finding an audit_disagreement case.
func (a *Auditor) CaseKind() string { return cases.AuditDisagreement }

// Run audits the payments created in the period ending Settle before now.
// Any error means nothing is known and no finding closes.
func (a *Auditor) Run(ctx context.Context, now time.Time) ([]store.Finding, error) {
	held, err := a.ingest.Payments(ctx, now.Add(-a.cfg.Window), now.Add(-a.cfg.Settle))
	if err != nil {
		return nil, err
	}
	ours, orders, err := a.recorded(ctx, held)
	if err != nil {
		return nil, err
	}
	var out []store.Finding
	for _, p := range held {
		f, err := a.compare(ctx, p, ours, orders)
		if err != nil {
			return nil, err
		}
		if f != nil {
			out = append(out, *f)
		}
	}
	return out, nil
}

// recorded reads ingest's record of the held payments and which of their
// orders ingest holds.
func (a *Auditor) recorded(ctx context.Context, held []Payment) (map[string]store.RecordedPayment, map[string]bool, error) {
	ids, refs := make([]string, 0, len(held)), make([]string, 0, len(held))
	for _, p := range held {
		ids = append(ids, p.ID)
		if p.OrderID != "" {
			refs = append(refs, p.OrderID)
		}
	}
	ours, err := a.records.PaymentsByID(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	orders, err := a.records.KnownOrders(ctx, refs)
	return ours, orders, err
}

// compare checks one PSP payment against ingest's record: a money
// movement ingest lacks is recovered, or a finding when its order is
// unknown; recorded money that differs is a finding.
func (a *Auditor) compare(ctx context.Context, p Payment, ours map[string]store.RecordedPayment, orders map[string]bool) (*store.Finding, error) {
	ref := p.PSP + ":" + p.ID
	rec, known := ours[p.ID]
	if known && (rec.AmountMinor != p.AmountMinor || rec.Currency != p.Currency) {
		return &store.Finding{Kind: AmountMismatch, Reference: ref, Detail: fmt.Sprintf(
			"the PSP holds %d %s, ingest recorded %d %s", p.AmountMinor, p.Currency, rec.AmountMinor, rec.Currency)}, nil
	}
	if !moved[p.Status] || (known && rec.Status == p.Status) {
		return nil, nil
	}
	if !known && !orders[p.OrderID] {
		return &store.Finding{Kind: UnknownOrder, Reference: ref, Detail: fmt.Sprintf(
			"the PSP holds a %s payment of %d %s that ingest never recorded, for an order ingest does not hold",
			p.Status, p.AmountMinor, p.Currency)}, nil
	}
	recorded, err := a.ingest.Recover(ctx, p.PSP, p.ID)
	if err != nil {
		return nil, err
	}
	outcome := "already_recorded"
	if recorded {
		outcome = "recorded"
	}
	a.recovered.WithLabelValues(outcome).Inc()
	a.log.Info("PSP audit recovered a payment", zap.String("psp", p.PSP), zap.String("id", p.ID),
		zap.String("status", p.Status), zap.String("outcome", outcome))
	return nil, nil
}
