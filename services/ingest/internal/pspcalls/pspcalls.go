// Package pspcalls records each call ingest makes to a PSP about one
// object (the apply worker's and the poller's re-fetches of a payment or
// refund, the poller's search by order reference) with its latency and
// outcome, so the console's trace shows them beside the provider
// attempts. It wraps a psp.Adapter; the audit's listings pass through
// unrecorded.
package pspcalls

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// Recorder keeps the calls; *store.Store is one.
type Recorder interface {
	RecordPSPFetch(ctx context.Context, f store.PSPFetch) error
}

// Operations, as recorded.
const (
	OpPayment         = "payment"
	OpRefund          = "refund"
	OpPaymentsOfOrder = "payments_of_order"
	// OpPaymentsOfSubscriptions is recorded under the first payment id
	// the listing started from, else the order reference.
	OpPaymentsOfSubscriptions = "payments_of_subscriptions"
)

// recordTimeout bounds one record's write, which runs even when the
// call's context ended (a call that was made is recorded).
const recordTimeout = 2 * time.Second

// recorded is an Adapter whose per-object calls are recorded.
type recorded struct {
	psp.Adapter
	rec Recorder
	log *zap.Logger
}

// subscriptionLister is an adapter that also lists the payments of
// subscriptions (the poller's SubscriptionLister).
type subscriptionLister interface {
	PaymentsOfSubscriptions(ctx context.Context, s psp.Subscriptions) ([]psp.Payment, error)
}

// recordedSubscriptions is a recorded adapter that also lists
// subscriptions' payments, so wrapping keeps what a adapter can do.
type recordedSubscriptions struct {
	*recorded
	subs subscriptionLister
}

// Wrap returns a, recording its Payment, Refund and PaymentsOfOrder calls
// (and PaymentsOfSubscriptions, when a has it) in rec. A call whose record
// fails is logged and still answered: the record is for the trace, never a
// reason to stop applying.
func Wrap(a psp.Adapter, rec Recorder, log *zap.Logger) psp.Adapter {
	r := &recorded{Adapter: a, rec: rec, log: log}
	if subs, ok := a.(subscriptionLister); ok {
		return &recordedSubscriptions{recorded: r, subs: subs}
	}
	return r
}

// PaymentsOfSubscriptions lists the payments of the subscriptions s names,
// recording the call under its first known payment id, else its order
// reference.
func (r *recordedSubscriptions) PaymentsOfSubscriptions(ctx context.Context, s psp.Subscriptions) ([]psp.Payment, error) {
	start := time.Now()
	ps, err := r.subs.PaymentsOfSubscriptions(ctx, s)
	id := s.OrderRef
	if len(s.Known) > 0 {
		id = s.Known[0]
	}
	r.record(ctx, OpPaymentsOfSubscriptions, id, start, Outcome(err))
	return ps, err
}

// Payment re-fetches payment id, recording the call.
func (r *recorded) Payment(ctx context.Context, id string) (psp.Payment, error) {
	start := time.Now()
	p, err := r.Adapter.Payment(ctx, id)
	r.record(ctx, OpPayment, id, start, Outcome(err))
	return p, err
}

// Refund re-fetches refund id, recording the call.
func (r *recorded) Refund(ctx context.Context, id string) (psp.Refund, error) {
	start := time.Now()
	f, err := r.Adapter.Refund(ctx, id)
	r.record(ctx, OpRefund, id, start, Outcome(err))
	return f, err
}

// PaymentsOfOrder searches the payments of orderRef, recording the call
// under the order reference (not_found when the PSP holds none).
func (r *recorded) PaymentsOfOrder(ctx context.Context, orderRef string) ([]psp.Payment, error) {
	start := time.Now()
	ps, err := r.Adapter.PaymentsOfOrder(ctx, orderRef)
	outcome := Outcome(err)
	if err == nil && len(ps) == 0 {
		outcome = "not_found"
	}
	r.record(ctx, OpPaymentsOfOrder, orderRef, start, outcome)
	return ps, err
}

func (r *recorded) record(ctx context.Context, op, id string, start time.Time, outcome string) {
	f := store.PSPFetch{PSP: r.Name(), Operation: op, ObjectID: id, Outcome: outcome, Latency: time.Since(start), At: time.Now()}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := r.rec.RecordPSPFetch(ctx, f); err != nil {
		r.log.Warn("record PSP call", zap.String("psp", f.PSP), zap.String("operation", op), zap.Error(err))
	}
}

// Outcome names what a call's error means: found, not_found,
// unavailable, refused or failed.
func Outcome(err error) string {
	switch {
	case err == nil:
		return "found"
	case errkind.Is(err, errkind.NotFound):
		return "not_found"
	case errkind.Is(err, errkind.Unavailable):
		return "unavailable"
	case errkind.Is(err, errkind.Refused):
		return "refused"
	}
	return "failed"
}
