// Package poller is ingest's answer to a lost webhook. Orders younger than
// a give-up age are searched at their PSP by our order reference, linked
// to a PSP payment or not, which finds a payment whose webhook never came
// (and a second payment on a paid order); the order's known payments with
// no final state that the search did not return, and registered refunds
// with none, are re-fetched by id. A recurring order is also searched by
// the subscriptions its recorded payments belong to and, when it names
// one, by its PSP plan's subscriptions (at a PSP that lists them), and
// past the give-up age is searched again at a slower pace while it is
// charged. Each status found is recorded as a
// receipt in its PSP source's dedupe scope; the apply worker then handles
// it exactly as if the webhook had come (a status already applied is a
// duplicate receipt and changes nothing). The poller only ever asks the
// PSP adapters, so it knows no PSP in particular.
package poller

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// Source is the receipts' source name, shown to operators.
const Source = "poller"

// Config tunes the poller.
type Config struct {
	After time.Duration // a refund is first polled this long after creation (an order: see store.Store.SetPollAfter)
	// Every is how often a refund is polled again, and how long after its
	// first poll an order is; an order's period doubles after each poll,
	// up to EveryMax.
	Every    time.Duration
	EveryMax time.Duration
	GiveUp   time.Duration // until it is this old
	// PaidGiveUp is GiveUp for an order with a PAID payment: how long a
	// second payment on it is looked for (the PSP audit covers later ones).
	PaidGiveUp time.Duration
	Interval   time.Duration // how often to look for such orders
	Batch      int           // orders per look
	// Concurrency is how many orders (and refunds) a round polls at once;
	// below 1 is 1.
	Concurrency int
	// RecurringEvery is how often a recurring order past GiveUp is polled
	// again (its subscription's later periods), until RecurringGiveUp
	// after its last recorded payment.
	RecurringEvery  time.Duration
	RecurringGiveUp time.Duration
	// RoundTimeout bounds one round's PSP calls, from the first: a PSP
	// that takes connections and never answers costs one round this long,
	// not a batch of call timeouts. The objects a round leaves are polled
	// again after Every. The claims before are database statements, not
	// counted against it (a database that hangs them is the liveness
	// check's, as it is for intake). Zero means no bound.
	RoundTimeout time.Duration
}

// PSP is what the poller asks of a PSP adapter.
type PSP interface {
	Payment(ctx context.Context, id string) (psp.Payment, error)
	Refund(ctx context.Context, id string) (psp.Refund, error)
	PaymentsOfOrder(ctx context.Context, orderRef string) ([]psp.Payment, error)
}

// SubscriptionLister is a PSP adapter whose subscriptions charge a
// recurring order in payments a search by order reference does not return
// (dLocal's executions). PaymentsOfSubscriptions lists every payment of
// the order's subscriptions: those of the plan s names subscribed with the
// order's reference, and each one a known payment id belongs to (an id of
// no subscription is skipped).
type SubscriptionLister interface {
	PaymentsOfSubscriptions(ctx context.Context, s psp.Subscriptions) ([]psp.Payment, error)
}

// Target is a PSP to poll and the dedupe scope of its sources.
type Target struct {
	Scope string
	PSP   PSP
}

// Poller re-fetches unsettled payments.
type Poller struct {
	store   *store.Store
	targets []Target
	log     *zap.Logger
	cfg     Config
	wake    chan<- struct{}
	polls   *prometheus.CounterVec
}

// New returns a poller over the targets (each order is searched at every
// one; an object fetched by id at the first that holds it); wake nudges
// the apply worker after a new receipt.
func New(st *store.Store, targets []Target, log *zap.Logger, reg prometheus.Registerer, cfg Config, wake chan<- struct{}) *Poller {
	pl := &Poller{store: st, targets: targets, log: log, cfg: cfg, wake: wake,
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

// Round claims one batch of due orders, one of due recurring orders past
// GiveUp and one of unsettled refunds and polls each; it returns how many
// receipts it recorded.
func (p *Poller) Round(ctx context.Context) (int, error) {
	now := time.Now()
	window := store.PollWindow{
		Now: now, Every: p.cfg.Every, EveryMax: p.cfg.EveryMax, SettleBefore: now.Add(-p.cfg.After), GiveUpBefore: now.Add(-p.cfg.GiveUp),
		PaidGiveUpBefore: now.Add(-p.cfg.PaidGiveUp), PolledBefore: now.Add(-p.cfg.Every),
		RecurringPolledBefore: now.Add(-p.cfg.RecurringEvery), RecurringGiveUpBefore: now.Add(-p.cfg.RecurringGiveUp), Max: p.cfg.Batch,
	}
	orders, err := p.store.ClaimDueOrders(ctx, window)
	if err != nil {
		return 0, err
	}
	recurring, err := p.store.ClaimDueRecurringOrders(ctx, window)
	if err != nil {
		return 0, err
	}
	orders = append(orders, recurring...)
	refunds, err := p.store.ClaimUnsettledRefunds(ctx, window)
	if err != nil {
		return 0, err
	}
	if p.cfg.RoundTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.RoundTimeout)
		defer cancel()
	}
	polls := make([]func(context.Context) int, 0, len(orders)+len(refunds))
	for _, o := range orders {
		polls = append(polls, func(ctx context.Context) int { return p.pollOrder(ctx, o) })
	}
	for _, id := range refunds {
		polls = append(polls, func(ctx context.Context) int { return p.pollRefund(ctx, id) })
	}
	recorded := p.pollAll(ctx, polls)
	if recorded > 0 {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	return recorded, nil
}

// pollAll runs polls, Concurrency at a time, until the round's time is up,
// and returns the receipts they recorded. The first always runs, so a
// round makes progress however short its bound; a poll whose turn comes
// after the bound is left to the next round.
func (p *Poller) pollAll(ctx context.Context, polls []func(context.Context) int) int {
	var recorded atomic.Int64
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(p.cfg.Concurrency, 1))
	for i, poll := range polls {
		slots <- struct{}{} // its turn: a poll ended, or there were slots left
		if i > 0 && p.outOfTime(ctx, "object") {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			recorded.Add(int64(poll(ctx)))
		})
	}
	wg.Wait()
	return int(recorded.Load())
}

// outOfTime reports whether the round's time is up; otherwise it beats the
// loop's heartbeat (a round of slow calls is progress, not a stall).
func (p *Poller) outOfTime(ctx context.Context, kind string) bool {
	if ctx.Err() != nil {
		p.log.Warn("poll round out of time", zap.String("kind", kind))
		return true
	}
	worker.Beat(ctx)
	return false
}

// pollOrder searches every target for the order's payments (a recurring
// order's also by its subscriptions) and
// records their statuses, then re-fetches the order's unsettled payments
// the searches did not return.
func (p *Poller) pollOrder(ctx context.Context, o store.DueOrder) int {
	recorded, seen := 0, map[string]bool{}
	for _, t := range p.targets {
		found, err := t.PSP.PaymentsOfOrder(ctx, o.MerchantOrderID)
		if err != nil {
			p.count("error")
			p.log.Warn("search payments of order", zap.Error(err)) // never the order id: the merchant's reference
			continue
		}
		recorded += p.recordFound(ctx, t.Scope, found, seen)
		recorded += p.pollSubscriptions(ctx, t, psp.Subscriptions{OrderRef: o.MerchantOrderID, Plan: o.PSPPlanID, Known: o.RecurringPayments}, seen)
	}
	for _, id := range o.Unsettled {
		if seen[id] {
			continue
		}
		if p.outOfTime(ctx, "payment") {
			break
		}
		recorded += p.fetch(ctx, "payment", id, func(ctx context.Context, t PSP) (string, error) {
			pay, err := t.Payment(ctx, id)
			return pay.Status, err
		})
	}
	return recorded
}

// pollSubscriptions lists at t, when its adapter can, the payments of the
// subscriptions of a recurring order (its recorded payments' and its
// plan's, s) and records their statuses.
func (p *Poller) pollSubscriptions(ctx context.Context, t Target, s psp.Subscriptions, seen map[string]bool) int {
	subs, ok := t.PSP.(SubscriptionLister)
	if !ok || (len(s.Known) == 0 && s.Plan == "") || p.outOfTime(ctx, "subscription") {
		return 0
	}
	found, err := subs.PaymentsOfSubscriptions(ctx, s)
	if err != nil {
		p.count("error")
		p.log.Warn("list payments of subscriptions", zap.Error(err))
		return 0
	}
	return p.recordFound(ctx, t.Scope, found, seen)
}

// recordFound records the status of each payment found at the PSP of
// scope and marks it seen.
func (p *Poller) recordFound(ctx context.Context, scope string, found []psp.Payment, seen map[string]bool) int {
	recorded := 0
	for _, pay := range found {
		seen[pay.ID] = true
		recorded += p.record(ctx, scope, "payment", pay.ID, pay.Status)
	}
	return recorded
}

// pollRefund re-fetches a registered refund.
func (p *Poller) pollRefund(ctx context.Context, id string) int {
	return p.fetch(ctx, "refund", id, func(ctx context.Context, t PSP) (string, error) {
		r, err := t.Refund(ctx, id)
		return r.Status, err
	})
}

// fetch asks each target in turn for object id's status and records it
// under the first that holds it.
func (p *Poller) fetch(ctx context.Context, kind, id string, status func(context.Context, PSP) (string, error)) int {
	for _, t := range p.targets {
		st, err := status(ctx, t.PSP)
		if errkind.Is(err, errkind.NotFound) {
			continue
		}
		if err != nil {
			p.count("error")
			p.log.Warn("poll", zap.String("kind", kind), zap.String("id", id), zap.Error(err))
			return 0
		}
		return p.record(ctx, t.Scope, kind, id, st)
	}
	p.count("error")
	p.log.Warn("poll: no PSP holds the object", zap.String("kind", kind), zap.String("id", id))
	return 0
}

// record records object id's status as a receipt under the dedupe key a
// webhook of that status would have; it returns 1 when the receipt is new.
func (p *Poller) record(ctx context.Context, scope, kind, id, status string) int {
	body, _ := json.Marshal(map[string]string{"id": id, "status": status})
	inserted, err := p.store.InsertReceipt(ctx, store.NewReceipt{
		Source: Source, Scope: scope, Kind: string(webhook.KindPSP), DedupeKey: webhook.StatusKey(kind, id, status),
		EventID: id, EventType: kind, Body: body,
	})
	switch {
	case err != nil:
		p.count("error")
		p.log.Warn("record polled status", zap.String("kind", kind), zap.String("id", id), zap.Error(err))
		return 0
	case !inserted:
		p.count("unchanged")
		return 0
	}
	p.count("new_status")
	p.log.Info("poll found a new status", zap.String("kind", kind), zap.String("id", id), zap.String("status", status))
	return 1
}

func (p *Poller) count(outcome string) { p.polls.WithLabelValues(outcome).Inc() }
