// Package poller is ingest's answer to a lost webhook: payments (orders with
// a PSP payment id) and refunds (registered through the API) with no final
// state some time after they were registered are re-fetched, and a new
// status is recorded as a receipt in the PSP source's dedupe scope. The
// apply worker then handles it exactly as if the webhook had come, and a
// webhook arriving later with that status is a duplicate.
package poller

import (
	"context"
	"encoding/json"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/services/ingest/internal/apply"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// Source is the receipts' source name, shown to operators.
const Source = "poller"

// Config tunes the poller.
type Config struct {
	After    time.Duration // an order is first polled this long after creation
	Every    time.Duration // and again this often
	GiveUp   time.Duration // until it is this old
	Interval time.Duration // how often to look for such orders
	Batch    int           // orders per look
	Scope    string        // the PSP source's dedupe scope
	// RoundTimeout bounds one round, PSP calls included: a PSP that takes
	// connections and never answers costs one round this long, not a
	// batch of call timeouts. The objects a round leaves are polled again
	// after Every. Zero means no bound.
	RoundTimeout time.Duration
}

// Poller re-fetches unsettled payments.
type Poller struct {
	store *store.Store
	psp   apply.PSP
	log   *zap.Logger
	cfg   Config
	wake  chan<- struct{}
	polls *prometheus.CounterVec
}

// New returns a poller; wake nudges the apply worker after a new receipt.
func New(st *store.Store, p apply.PSP, log *zap.Logger, reg prometheus.Registerer, cfg Config, wake chan<- struct{}) *Poller {
	pl := &Poller{store: st, psp: p, log: log, cfg: cfg, wake: wake,
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_ingest_polls_total", Help: "Status polls of unsettled payments by outcome (unchanged, new_status, error).",
		}, []string{"outcome"})}
	reg.MustRegister(pl.polls)
	return pl
}

// Run polls every Interval until ctx ends.
func (p *Poller) Run(ctx context.Context) error {
	worker.Every(ctx, p.cfg.Interval, func(ctx context.Context) {
		if _, err := p.Round(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("poll round failed", zap.Error(err))
		}
	})
	return nil
}

// Round claims one batch of unsettled payments and one of refunds and
// re-fetches each; it returns how many receipts it recorded.
func (p *Poller) Round(ctx context.Context) (int, error) {
	if p.cfg.RoundTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.RoundTimeout)
		defer cancel()
	}
	now := time.Now()
	window := store.PollWindow{
		SettleBefore: now.Add(-p.cfg.After), GiveUpBefore: now.Add(-p.cfg.GiveUp),
		PolledBefore: now.Add(-p.cfg.Every), Max: p.cfg.Batch,
	}
	payments, err := p.store.ClaimUnsettledPayments(ctx, window)
	if err != nil {
		return 0, err
	}
	refunds, err := p.store.ClaimUnsettledRefunds(ctx, window)
	if err != nil {
		return 0, err
	}
	recorded := p.pollAll(ctx, "payment", payments, p.paymentStatus) + p.pollAll(ctx, "refund", refunds, p.refundStatus)
	if recorded > 0 {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	return recorded, nil
}

// pollAll polls each id, beating the loop's heartbeat before each call (a
// round of slow calls is progress, not a stall), until ctx ends.
func (p *Poller) pollAll(ctx context.Context, kind string, ids []string, status func(context.Context, string) (string, error)) int {
	recorded := 0
	for i, id := range ids {
		if ctx.Err() != nil {
			p.log.Warn("poll round out of time", zap.String("kind", kind), zap.Int("left", len(ids)-i))
			break
		}
		worker.Beat(ctx)
		recorded += p.poll(ctx, kind, id, status)
	}
	return recorded
}

func (p *Poller) paymentStatus(ctx context.Context, id string) (string, error) {
	pay, err := p.psp.Payment(ctx, id)
	return pay.Status, err
}

func (p *Poller) refundStatus(ctx context.Context, id string) (string, error) {
	r, err := p.psp.Refund(ctx, id)
	return r.Status, err
}

// poll fetches one object's status and records it as a receipt whose dedupe
// key is the one a webhook of that status would have; it returns 1 when the
// receipt is new.
func (p *Poller) poll(ctx context.Context, kind, id string, status func(context.Context, string) (string, error)) int {
	outcome := "new_status"
	defer func() { p.polls.WithLabelValues(outcome).Inc() }()
	st, err := status(ctx, id)
	if err != nil {
		outcome = "error"
		p.log.Warn("poll", zap.String("kind", kind), zap.String("id", id), zap.Error(err))
		return 0
	}
	body, _ := json.Marshal(map[string]string{"id": id, "status": st})
	inserted, err := p.store.InsertReceipt(ctx, store.NewReceipt{
		Source: Source, Scope: p.cfg.Scope, Kind: string(webhook.KindPSP), DedupeKey: webhook.DLocalKey(kind, id, st),
		EventID: id, EventType: kind, Body: body,
	})
	switch {
	case err != nil:
		outcome = "error"
		p.log.Warn("record polled status", zap.String("kind", kind), zap.String("id", id), zap.Error(err))
		return 0
	case !inserted:
		outcome = "unchanged"
		return 0
	}
	p.log.Info("poll found a new status", zap.String("kind", kind), zap.String("id", id), zap.String("status", st))
	return 1
}
