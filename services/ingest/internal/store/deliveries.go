package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryParked    = "parked"
)

// Delivery is one event to POST to the merchant, and where its delivery
// stands.
type Delivery struct {
	ID            int64
	EventID       string // stable across attempts: the webhook-id header
	EventType     string
	Payload       []byte // the JSON body, signed and sent as it is
	Status        string // DeliveryPending, DeliveryDelivered or DeliveryParked
	Attempts      int32
	NextAttemptAt time.Time
	LastError     *string
	CreatedAt     time.Time
	DeliveredAt   *time.Time
	ParkedAt      *time.Time
	ReplayedBy    *string // the last operator replay: who
	ReplayReason  *string // and why
}

// DeliveryAttempt is one POST of a delivery: the merchant's HTTP status (0
// when none came back) or the error, and how long it took.
type DeliveryAttempt struct {
	DeliveryID  int64
	HTTPStatus  int32
	Error       string
	LatencyMS   int32
	AttemptedAt time.Time
}

func deliveryFromRow(r dbsqlc.IngestNotificationDelivery) Delivery {
	return Delivery{ID: r.ID, EventID: r.EventID, EventType: r.EventType, Payload: r.Payload, Status: r.Status,
		Attempts: r.Attempts, NextAttemptAt: r.NextAttemptAt, LastError: r.LastError, CreatedAt: r.CreatedAt,
		DeliveredAt: r.DeliveredAt, ParkedAt: r.ParkedAt, ReplayedBy: r.ReplayedBy, ReplayReason: r.ReplayReason}
}

// QueueDelivery queues the delivery of one event, once: an event id queued
// before queues nothing.
func (t *Tx) QueueDelivery(ctx context.Context, eventID, eventType string, payload []byte) error {
	return pg.Interpret(t.q.DeliveryInsert(ctx, eventID, eventType, payload), "queue delivery %s", eventID)
}

// ClaimDeliveries leases up to max due deliveries for lease under token.
func (s *Store) ClaimDeliveries(ctx context.Context, token uuid.UUID, lease time.Duration, max int) ([]Delivery, error) {
	rows, err := s.q.DeliveryClaimDue(ctx, &token, lease.Seconds(), int32(max))
	if err != nil {
		return nil, pg.Interpret(err, "claim deliveries")
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		out[i] = deliveryFromRow(r)
	}
	return out, nil
}

// Outcome is the result of one attempt to save: delivered, or failed and
// retried after RetryIn or parked.
type Outcome struct {
	Attempt   DeliveryAttempt
	Delivered bool
	Park      bool          // give up until an operator replays it
	RetryIn   time.Duration // when not delivered nor parked
}

// SaveOutcome logs the attempt and moves the delivery on, while token's
// lease holds; it returns the delivery's new status ("" when the lease was
// lost and nothing but the attempt was recorded).
func (s *Store) SaveOutcome(ctx context.Context, token uuid.UUID, o Outcome) (status string, err error) {
	err = s.InTx(ctx, func(t *Tx) error {
		a := o.Attempt
		if err := t.q.DeliveryAttemptInsert(ctx, dbsqlc.DeliveryAttemptInsertParams{DeliveryID: a.DeliveryID,
			HttpStatus: a.HTTPStatus, Error: a.Error, LatencyMs: a.LatencyMS}); err != nil {
			return pg.Interpret(err, "log attempt of delivery %d", a.DeliveryID)
		}
		if o.Delivered {
			n, err := t.q.DeliveryMarkDelivered(ctx, a.DeliveryID, &token)
			if n > 0 {
				status = DeliveryDelivered
			}
			return pg.Interpret(err, "mark delivery %d delivered", a.DeliveryID)
		}
		status, err = t.q.DeliveryMarkFailed(ctx, dbsqlc.DeliveryMarkFailedParams{ID: a.DeliveryID, LeaseToken: &token,
			LastError: &a.Error, Park: o.Park, RetryInSeconds: o.RetryIn.Seconds()})
		err = pg.Interpret(err, "mark delivery %d failed", a.DeliveryID)
		if errkind.Is(err, errkind.NotFound) { // the lease was lost: another deliverer owns it now
			status, err = "", nil
		}
		return err
	})
	return status, err
}

// ReplayDelivery sends delivery id again now, its attempts counted afresh,
// recording actor and reason; it reports false when the delivery is still
// pending (or does not exist).
func (s *Store) ReplayDelivery(ctx context.Context, id int64, actor, reason string) (bool, error) {
	n, err := s.q.DeliveryReplay(ctx, &actor, &reason, id)
	return n > 0, pg.Interpret(err, "replay delivery %d", id)
}

// Delivery returns delivery id with its attempts, or an error of kind
// NotFound.
func (s *Store) Delivery(ctx context.Context, id int64) (Delivery, []DeliveryAttempt, error) {
	r, err := s.q.DeliveryGet(ctx, id)
	if err != nil {
		return Delivery{}, nil, pg.Interpret(err, "delivery %d", id)
	}
	rows, err := s.q.DeliveryAttempts(ctx, id)
	if err != nil {
		return Delivery{}, nil, pg.Interpret(err, "attempts of delivery %d", id)
	}
	attempts := make([]DeliveryAttempt, len(rows))
	for i, a := range rows {
		attempts[i] = DeliveryAttempt{DeliveryID: a.DeliveryID, HTTPStatus: a.HttpStatus, Error: a.Error, LatencyMS: a.LatencyMs, AttemptedAt: a.AttemptedAt}
	}
	return deliveryFromRow(r), attempts, nil
}

// Deliveries returns up to max deliveries older than beforeID (0: from the
// newest), newest first, of status when it is set.
func (s *Store) Deliveries(ctx context.Context, status string, beforeID int64, max int) ([]Delivery, error) {
	var st *string
	if status != "" {
		st = &status
	}
	rows, err := s.q.DeliveryList(ctx, st, beforeID, int32(max))
	if err != nil {
		return nil, pg.Interpret(err, "list deliveries")
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		out[i] = deliveryFromRow(r)
	}
	return out, nil
}

// OpenDeliveryCounts returns how many deliveries are pending and parked
// (statuses without one are absent), reading only the open rows.
func (s *Store) OpenDeliveryCounts(ctx context.Context) (map[string]int64, error) {
	rows, err := s.q.DeliveryCountOpen(ctx)
	if err != nil {
		return nil, pg.Interpret(err, "count deliveries")
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Status] = r.Deliveries
	}
	return out, nil
}

// PruneDeliveries deletes up to max notifications delivered before cutoff,
// with their attempt logs, and returns how many it deleted.
func (s *Store) PruneDeliveries(ctx context.Context, cutoff time.Time, max int) (int64, error) {
	n, err := s.q.DeliveryPrune(ctx, cutoff, int32(max))
	return n, pg.Interpret(err, "prune deliveries")
}
