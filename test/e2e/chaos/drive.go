package chaos

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/test/e2e/stack"
)

// drive pays every planned payment, cfg.Concurrency at a time, and refunds
// the planned share. Payments are spread over the disruptions' schedule so
// that money keeps moving while services die.
func (r *run) drive(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.Concurrency)
	spacing := time.Duration(len(events(r.cfg))+1) * r.cfg.KillEvery / time.Duration(r.cfg.Payments)
	for i, p := range plans(r.cfg) {
		if !backoff.Sleep(ctx, time.Until(r.start.Add(time.Duration(i)*spacing))) {
			break
		}
		g.Go(func() error { return r.payOne(ctx, i, p) })
	}
	return g.Wait()
}

// payOne creates payment i at its PSP (notifying one ingest instance or
// the other), tells ingest its buyer and order, and refunds it when planned.
// Calls to ingest are retried, with their Idempotency-Key, while instances
// are killed or PostgreSQL is down.
func (r *run) payOne(ctx context.Context, i int, p plan) error {
	ingest := r.s.IngestURLs[i%len(r.s.IngestURLs)]
	orderID := fmt.Sprintf("chaos-%d-%d", r.cfg.Seed, i)
	pspAmount := p.amountMinor
	if p.mismatch {
		pspAmount += 100 // one peso more than the order
	}
	pay, err := r.s.PayAt(ctx, p.psp, orderID, pspAmount, ingest)
	if err != nil {
		return err
	}
	if p.refuse {
		if err := r.refuse(ctx, pay); err != nil {
			return err
		}
	}
	var customer struct {
		ID string `json:"id"`
	}
	if err := r.api(ctx, i, "/v1/customers", buyer(i, p.company), "customer-"+orderID, &customer); err != nil {
		return err
	}
	order := map[string]any{"merchant_order_id": orderID, "customer_id": customer.ID, "amount_minor": p.amountMinor,
		"currency": "UYU", "psp_payment_id": pay}
	if err := r.api(ctx, i, "/v1/orders", order, "order-"+orderID, nil); err != nil {
		return err
	}
	r.add(Source{Key: "payment:" + pay, WantType: docType(p.company, false), PSP: p.psp})
	r.paid.Add(1)
	switch {
	case p.double:
		return r.payAgain(ctx, orderID, pay, p, ingest)
	case p.chargeback:
		return r.chargeBack(ctx, pay, p)
	case !p.refund:
		return nil
	}
	return r.refundOne(ctx, i, pay, p, ingest)
}

// payAgain pays orderID a second time once its first payment is PAID at
// the PSP: ingest opens an unmatched_payment case (second_payment) for
// whichever of the two it applies second.
func (r *run) payAgain(ctx context.Context, orderID, first string, p plan, ingest string) error {
	if err := r.waitPaid(ctx, p.psp, first); err != nil {
		return err
	}
	pay, err := r.s.PayAt(ctx, p.psp, orderID, p.amountMinor, ingest)
	if err != nil {
		return err
	}
	r.add(Source{Key: "payment:" + pay, WantType: docType(p.company, false), PSP: p.psp})
	r.seconds.Add(1)
	return nil
}

// chargeBack has payment pay charged back at its PSP once ingest recorded
// it PAID (its invoice asked for): ingest opens a chargeback case, found
// by the notification or, when that is lost, by the poller's search.
func (r *run) chargeBack(ctx context.Context, pay string, p plan) error {
	err := stack.WaitFor(ctx, 3*time.Minute, func() (bool, error) {
		var status string
		err := r.db.QueryRow(ctx, "SELECT status FROM ingest.payments WHERE id = $1", pay).Scan(&status)
		return status == "PAID", fmt.Errorf("payment %s is %q at ingest (%v)", pay, status, err)
	})
	if err != nil {
		return err
	}
	if err := r.s.ChargebackAt(ctx, p.psp, pay); err != nil {
		return fmt.Errorf("charge back %s at %s: %w", pay, p.psp, err)
	}
	r.chargebacksMu.Lock()
	r.chargebacks = append(r.chargebacks, pay)
	r.chargebacksMu.Unlock()
	return nil
}

func (r *run) refundOne(ctx context.Context, i int, pay string, p plan, ingest string) error {
	if err := r.waitPaid(ctx, p.psp, pay); err != nil {
		return err
	}
	amount := p.amountMinor
	if p.partial {
		amount /= 2
	}
	ref, err := r.s.RefundAt(ctx, p.psp, pay, amount, ingest)
	if err != nil {
		return err
	}
	watch := map[string]string{"psp_refund_id": ref, "psp_payment_id": pay}
	if err := r.api(ctx, i, "/v1/refunds", watch, "refund-"+ref, nil); err != nil {
		return err
	}
	r.add(Source{Key: "refund:" + ref, WantType: docType(p.company, true), PSP: p.psp})
	r.refunded.Add(1)
	return nil
}

// waitPaid waits for a payment that started pending to be approved at psp.
func (r *run) waitPaid(ctx context.Context, psp, pay string) error {
	return stack.WaitFor(ctx, time.Minute, func() (bool, error) {
		paid, st, err := r.s.PaidAt(ctx, psp, pay)
		return paid, fmt.Errorf("payment %s is %q at %s (%v)", pay, st, psp, err)
	})
}

// api posts to ingest, trying the instances in turn for up to two minutes.
func (r *run) api(ctx context.Context, i int, path string, body any, key string, out any) error {
	deadline := time.Now().Add(2 * time.Minute)
	urls := r.s.IngestURLs
	for attempt := 0; ; attempt++ {
		err := r.s.API(ctx, urls[(i+attempt)%len(urls)], path, body, key, out)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if !backoff.Sleep(ctx, 250*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// docType is the CFE type a source must end in.
func docType(company, creditNote bool) int {
	switch {
	case company && creditNote:
		return 112
	case company:
		return 111
	case creditNote:
		return 102
	}
	return 101
}
