// Package poller is ingest's answer to a lost webhook: orders whose PSP
// payment has no final state some time after the order was created are
// re-fetched, and a new status is recorded as a receipt in the PSP source's
// dedupe scope. The apply worker then handles it exactly as if the webhook
// had come, and a webhook arriving later with that status is a duplicate.
package poller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// Source is the receipts' source name, shown to operators.
const Source = "poller"

// PSP fetches a payment's authoritative state.
type PSP interface {
	Payment(ctx context.Context, id string) (psp.Payment, error)
}

// Config tunes the poller.
type Config struct {
	After    time.Duration // an order is first polled this long after creation
	Every    time.Duration // and again this often
	GiveUp   time.Duration // until it is this old
	Interval time.Duration // how often to look for such orders
	Batch    int           // orders per look
	Scope    string        // the PSP source's dedupe scope
}

// Poller re-fetches unsettled payments.
type Poller struct {
	queries *store.Queries
	psp     PSP
	log     *zap.Logger
	cfg     Config
	wake    chan<- struct{}
	polls   *prometheus.CounterVec
}

// New returns a poller; wake nudges the apply worker after a new receipt.
func New(q *store.Queries, p PSP, log *zap.Logger, reg prometheus.Registerer, cfg Config, wake chan<- struct{}) *Poller {
	pl := &Poller{queries: q, psp: p, log: log, cfg: cfg, wake: wake,
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_ingest_polls_total", Help: "Status polls of unsettled payments by outcome (unchanged, new_status, error).",
		}, []string{"outcome"})}
	reg.MustRegister(pl.polls)
	return pl
}

// Run polls every Interval until ctx ends.
func (p *Poller) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := p.Round(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("poll round failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Round claims one batch of unsettled orders and re-fetches each payment;
// it returns how many receipts it recorded.
func (p *Poller) Round(ctx context.Context) (int, error) {
	now := time.Now()
	polledBefore := now.Add(-p.cfg.Every)
	orders, err := p.queries.OrderClaimUnsettled(ctx, store.OrderClaimUnsettledParams{
		SettleBefore: now.Add(-p.cfg.After), GiveUpBefore: now.Add(-p.cfg.GiveUp),
		PolledBefore: &polledBefore, MaxRows: int32(p.cfg.Batch),
	})
	if err != nil {
		return 0, fmt.Errorf("claim unsettled orders: %w", err)
	}
	recorded := 0
	for _, o := range orders {
		outcome := p.poll(ctx, *o.PspPaymentID)
		p.polls.WithLabelValues(outcome).Inc()
		if outcome == "new_status" {
			recorded++
		}
	}
	if recorded > 0 {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	return recorded, nil
}

// poll fetches one payment and records its status as a receipt; the
// receipt's dedupe key is the one a webhook of that status would have.
func (p *Poller) poll(ctx context.Context, paymentID string) string {
	pay, err := p.psp.Payment(ctx, paymentID)
	if err != nil {
		p.log.Warn("poll payment", zap.String("payment", paymentID), zap.Error(err))
		return "error"
	}
	body, _ := json.Marshal(map[string]string{"id": pay.ID, "status": pay.Status})
	n, err := p.queries.ReceiptInsert(ctx, store.ReceiptInsertParams{
		Source: Source, Scope: p.cfg.Scope, Kind: "psp", DedupeKey: "payment:" + pay.ID + ":" + pay.Status,
		EventID: pay.ID, EventType: "payment", Body: body,
	})
	if err != nil {
		p.log.Warn("record polled status", zap.String("payment", paymentID), zap.Error(err))
		return "error"
	}
	if n == 0 {
		return "unchanged"
	}
	p.log.Info("poll found a new status", zap.String("payment", pay.ID), zap.String("status", pay.Status))
	return "new_status"
}
