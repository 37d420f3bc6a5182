// Package pspaudit checks ingest's ledger against the PSPs' own records:
// for a period it lists the payments and refunds every PSP holds (through ingest's
// admin API, since ingest holds the adapters) and compares them with what
// ingest recorded, read through the read-only ingest connection. A payment
// that moved money (PAID, or charged back) that ingest never recorded, or
// recorded in another status, is recovered through the webhook path (ingest
// re-fetches it and applies it as its webhook) when its order is
// identifiable; otherwise it is a finding and an audit_disagreement case.
// A successful refund ingest lacks is recovered the same way when ingest
// holds its payment, and is a finding otherwise. A recorded payment or
// refund whose money differs from the PSP's is a finding too.
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
	// UnknownPayment: the PSP holds a successful refund that ingest never
	// recorded, of a payment ingest does not hold.
	UnknownPayment = "psp_audit_unknown_payment"
	// AmountMismatch: ingest recorded the payment or refund with other
	// money than the PSP holds.
	AmountMismatch = "psp_audit_amount_mismatch"
)

// Kinds are every kind a PSP audit run checks.
var Kinds = []string{UnknownOrder, UnknownPayment, AmountMismatch}

// moved are the normalized statuses of a payment or refund that moved
// money.
var moved = map[string]bool{"PAID": true, "CHARGEBACK": true, "SUCCESS": true}

// Ingest is what the audit asks of ingest's admin API.
type Ingest interface {
	Payments(ctx context.Context, from, to time.Time) ([]Payment, error)
	Refunds(ctx context.Context, from, to time.Time) ([]Refund, error)
	Recover(ctx context.Context, psp, kind, id string) (recorded bool, err error)
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
	listed    *prometheus.CounterVec
}

// New returns the audit; it registers its counter with reg.
func New(ingest Ingest, records *store.IngestReader, cfg Config, log *zap.Logger, reg prometheus.Registerer) *Auditor {
	a := &Auditor{ingest: ingest, records: records, cfg: cfg, log: log,
		recovered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_reconciler_psp_recovered_total",
			Help: "PSP payments and refunds the PSP audit found ingest had not recorded and sent back through the webhook path, by kind (payment, refund) and outcome (recorded, already_recorded).",
		}, []string{"kind", "outcome"}),
		listed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_reconciler_psp_audit_listed_total",
			Help: "PSP payments and refunds the PSP audit listed, by kind: each run lists those created in its window (RECONCILER_PSP_AUDIT_WINDOW).",
		}, []string{"kind"})}
	reg.MustRegister(a.recovered, a.listed)
	return a
}

// Name implements reconcile.Checker.
func (a *Auditor) Name() string { return "psp_audit" }

// Kinds implements reconcile.Checker.
func (a *Auditor) Kinds() []string { return Kinds }

// CaseKind makes each finding an audit_disagreement case.
func (a *Auditor) CaseKind() string { return cases.AuditDisagreement }

// Run audits the payments and refunds created in the period ending Settle
// before now: its cost is what the PSPs created in Window, whatever the
// history (docs/reconciler-audit.md). Any error means nothing is known and
// no finding closes.
func (a *Auditor) Run(ctx context.Context, now time.Time) ([]store.Finding, error) {
	from, to := now.Add(-a.cfg.Window), now.Add(-a.cfg.Settle)
	payments, err := a.ingest.Payments(ctx, from, to)
	if err != nil {
		return nil, err
	}
	refunds, err := a.ingest.Refunds(ctx, from, to)
	if err != nil {
		return nil, err
	}
	a.listed.WithLabelValues("payment").Add(float64(len(payments)))
	a.listed.WithLabelValues("refund").Add(float64(len(refunds)))
	var objects []object
	for _, p := range payments {
		objects = append(objects, object{kind: "payment", psp: p.PSP, id: p.ID, status: p.Status, amount: p.AmountMinor,
			currency: p.Currency, parent: p.OrderID})
	}
	for _, r := range refunds {
		objects = append(objects, object{kind: "refund", psp: r.PSP, id: r.ID, status: r.Status, amount: r.AmountMinor,
			currency: r.Currency, parent: r.PaymentID})
	}
	k, err := a.known(ctx, payments, refunds)
	if err != nil {
		return nil, err
	}
	var out []store.Finding
	for _, o := range objects {
		f, err := a.compare(ctx, o, k)
		if err != nil {
			return nil, err
		}
		if f != nil {
			out = append(out, *f)
		}
	}
	return out, nil
}

// object is a PSP payment or refund; parent is a payment's order
// reference, a refund's payment id.
type object struct {
	kind, psp, id, status string
	amount                int64
	currency, parent      string
}

// knowledge is what ingest recorded of the PSP's objects.
type knowledge struct {
	payments, refunds map[string]store.RecordedPayment
	orders            map[string]bool
}

// recorded returns ingest's record of o, if any.
func (k knowledge) recorded(o object) (store.RecordedPayment, bool) {
	if o.kind == "refund" {
		r, ok := k.refunds[o.id]
		return r, ok
	}
	p, ok := k.payments[o.id]
	return p, ok
}

// parentKnown reports whether ingest holds o's order (a payment) or
// payment (a refund).
func (k knowledge) parentKnown(o object) bool {
	if o.kind == "refund" {
		_, ok := k.payments[o.parent]
		return ok
	}
	return k.orders[o.parent]
}

// known reads ingest's record of the listed payments and refunds, of the
// refunds' payments and of the payments' orders.
func (a *Auditor) known(ctx context.Context, payments []Payment, refunds []Refund) (knowledge, error) {
	var payIDs, refIDs, orders []string
	for _, p := range payments {
		payIDs = append(payIDs, p.ID)
		if p.OrderID != "" {
			orders = append(orders, p.OrderID)
		}
	}
	for _, r := range refunds {
		refIDs, payIDs = append(refIDs, r.ID), append(payIDs, r.PaymentID)
	}
	var k knowledge
	var err error
	if k.payments, err = a.records.PaymentsByID(ctx, payIDs); err != nil {
		return k, err
	}
	if k.refunds, err = a.records.RefundsByID(ctx, refIDs); err != nil {
		return k, err
	}
	k.orders, err = a.records.KnownOrders(ctx, orders)
	return k, err
}

// compare checks one PSP object against ingest's record: money moved that
// ingest lacks is recovered, or a finding when what it belongs to is
// unknown; recorded money that differs is a finding.
func (a *Auditor) compare(ctx context.Context, o object, k knowledge) (*store.Finding, error) {
	ref := o.psp + ":" + o.id
	rec, known := k.recorded(o)
	if known && (rec.AmountMinor != o.amount || rec.Currency != o.currency) {
		return &store.Finding{Kind: AmountMismatch, Reference: ref, Detail: fmt.Sprintf(
			"the PSP holds %s %s of %d %s, ingest recorded %d %s", o.kind, o.id, o.amount, o.currency, rec.AmountMinor, rec.Currency)}, nil
	}
	if !moved[o.status] || (known && rec.Status == o.status) {
		return nil, nil
	}
	if !known && !k.parentKnown(o) {
		kind, of := UnknownOrder, "an order"
		if o.kind == "refund" {
			kind, of = UnknownPayment, "a payment"
		}
		return &store.Finding{Kind: kind, Reference: ref, Detail: fmt.Sprintf(
			"the PSP holds a %s %s of %d %s that ingest never recorded, of %s ingest does not hold",
			o.status, o.kind, o.amount, o.currency, of)}, nil
	}
	recorded, err := a.ingest.Recover(ctx, o.psp, o.kind, o.id)
	if err != nil {
		return nil, err
	}
	outcome := "already_recorded"
	if recorded {
		outcome = "recorded"
	}
	a.recovered.WithLabelValues(o.kind, outcome).Inc()
	a.log.Info("PSP audit recovered an object", zap.String("psp", o.psp), zap.String("kind", o.kind), zap.String("id", o.id),
		zap.String("status", o.status), zap.String("outcome", outcome))
	return nil, nil
}
