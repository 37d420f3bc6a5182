// Package merchanthook delivers notifications to the merchant: it POSTs each
// queued delivery to the merchant's webhook URL, signed with Standard
// Webhooks (webhook-id, the event's stable id; webhook-timestamp;
// webhook-signature, "v1,<base64 HMAC-SHA256>" by the specification's own
// Go library), the scheme ingest itself verifies. A 2xx is delivered; any
// other answer, a redirect or no answer is retried with exponential
// backoff and jitter (honouring a longer Retry-After), and parked after the
// configured number of attempts, or at once on 410 Gone, until an operator
// replays it. Every attempt is logged in the delivery's attempt log.
// Delivery is at least once: a deliverer that dies after the merchant's 2xx
// and before saving it sends the event again under the same id.
package merchanthook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/httpclient"
	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// Config is the merchant endpoint and the delivery policy.
type Config struct {
	URL         string        // the merchant's webhook URL
	Secret      string        // the Standard Webhooks secret, "whsec_<base64>"
	Timeout     time.Duration // one POST, answer included
	Batch       int           // deliveries claimed per round
	Parallel    int           // POSTs in flight at once
	Lease       time.Duration // how long a claimed delivery is ours; longer than Timeout
	Poll        time.Duration // the fallback when nobody wakes the deliverer
	MaxAttempts int           // attempts before a delivery is parked
	Backoff     backoff.Policy
}

// Deliverer sends queued deliveries to the merchant.
type Deliverer struct {
	store   *store.Store
	hook    *standardwebhooks.Webhook
	client  *http.Client
	cfg     Config
	log     *zap.Logger
	wake    <-chan struct{}
	now     func() time.Time
	metrics metrics
}

// New returns a deliverer; wake nudges it when a delivery is queued. An
// error names a secret that is not a base64 whsec_ secret.
func New(st *store.Store, log *zap.Logger, reg prometheus.Registerer, cfg Config, wake <-chan struct{}) (*Deliverer, error) {
	hook, err := standardwebhooks.NewWebhook(cfg.Secret)
	if err != nil {
		return nil, errors.New("merchant webhook secret: want a base64 whsec_ secret")
	}
	client := httpclient.New(cfg.Timeout)
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse } // a 3xx is a failure
	return &Deliverer{store: st, hook: hook, client: client, cfg: cfg, log: log, wake: wake, now: time.Now, metrics: newMetrics(reg, st)}, nil
}

// Run delivers until ctx ends.
func (d *Deliverer) Run(ctx context.Context) error {
	worker.DrainThenWait(ctx, d.wake, d.cfg.Poll, d.Round)
	return nil
}

// Round claims due deliveries, POSTs them (up to Parallel at once) and saves
// each outcome; it reports whether a full batch was claimed.
func (d *Deliverer) Round(ctx context.Context) (more bool) {
	token := uuid.New()
	due, err := d.store.ClaimDeliveries(ctx, token, d.cfg.Lease, d.cfg.Batch)
	if err != nil {
		d.log.Error("claim deliveries", zap.Error(err))
		return false
	}
	var g errgroup.Group
	g.SetLimit(max(d.cfg.Parallel, 1))
	for _, del := range due {
		g.Go(func() error {
			d.deliver(context.WithoutCancel(ctx), token, del)
			return nil
		})
	}
	_ = g.Wait()
	return len(due) == d.cfg.Batch
}

// deliver POSTs del once and saves the outcome.
func (d *Deliverer) deliver(ctx context.Context, token uuid.UUID, del store.Delivery) {
	o := d.attempt(ctx, del)
	status, err := d.store.SaveOutcome(ctx, token, o)
	log := d.log.With(zap.Int64("delivery", del.ID), zap.String("event_id", del.EventID), zap.Int32("http_status", o.Attempt.HTTPStatus))
	switch {
	case err != nil:
		log.Error("save delivery outcome", zap.Error(err))
		return
	case status == "":
		log.Warn("delivery outcome not saved: another deliverer holds it now")
		return
	}
	d.metrics.attempts.WithLabelValues(outcomeLabel(status)).Inc()
	d.metrics.latency.Observe(float64(o.Attempt.LatencyMS) / 1000)
	if status == store.DeliveryParked {
		log.Warn("delivery parked", zap.Int32("attempts", del.Attempts+1), zap.String("error", o.Attempt.Error))
		return
	}
	log.Info("delivery attempt", zap.String("status", status))
}

// outcomeLabel names a saved outcome for the attempts counter.
func outcomeLabel(status string) string {
	if status == store.DeliveryPending {
		return "retry"
	}
	return status
}

// attempt POSTs del and judges the answer.
func (d *Deliverer) attempt(ctx context.Context, del store.Delivery) store.Outcome {
	start := time.Now() // latency on the monotonic clock, whatever d.now says
	code, retryAfter, err := d.post(ctx, del)
	a := store.DeliveryAttempt{DeliveryID: del.ID, HTTPStatus: int32(code), LatencyMS: int32(time.Since(start).Milliseconds())}
	if err == nil && code >= 200 && code < 300 {
		return store.Outcome{Attempt: a, Delivered: true}
	}
	if err != nil {
		a.Error = err.Error()
	} else {
		a.Error = "HTTP " + strconv.Itoa(code)
	}
	n := int(del.Attempts) + 1
	return store.Outcome{Attempt: a, Park: code == http.StatusGone || n >= d.cfg.MaxAttempts,
		RetryIn: max(d.cfg.Backoff.Delay(n), retryAfter)}
}

// post sends del signed as of now and returns the HTTP status and any
// Retry-After (in seconds) the merchant asked for.
func (d *Deliverer) post(ctx context.Context, del store.Delivery) (code int, retryAfter time.Duration, err error) {
	now := d.now()
	sig, err := d.hook.Sign(del.EventID, now, del.Payload)
	if err != nil {
		return 0, 0, fmt.Errorf("sign: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.cfg.URL, bytes.NewReader(del.Payload))
	if err != nil {
		return 0, 0, fmt.Errorf("request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "onceflow-notifications/1")
	req.Header.Set(standardwebhooks.HeaderWebhookID, del.EventID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, 0, errors.New("no answer from the merchant (connection failed or timed out)") // the URL may hold a token: not logged
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	return resp.StatusCode, retryAfter, nil
}
