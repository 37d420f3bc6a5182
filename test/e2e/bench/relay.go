package bench

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/test/e2e/stack"
)

// The relay's chunking: entries per SendMessageBatch call and calls in
// flight (services/relay, "How a run works").
const (
	entriesPerCall = 10
	callsInFlight  = 4
)

// message is what the relay sends for an outbox row: a real row's type
// and payload, taken from the pipeline run, so sizes are the real ones.
type message struct {
	eventType string
	payload   []byte // as stored
	body      string // as sent (outbox.Body)
	// signed are the two attributes the relay's key adds to each message
	// (package msgauth), signed once: the raw sender sends messages of the
	// relay's size without doing the relay's signing.
	signed map[string]types.MessageAttributeValue
}

// sampleMessage reads the first billing row the pipeline put in the outbox.
func sampleMessage(ctx context.Context, db *pgxpool.Pool) (message, error) {
	var m message
	err := db.QueryRow(ctx, `SELECT event_type, payload FROM ingest.outbox ORDER BY id LIMIT 1`).Scan(&m.eventType, &m.payload)
	if err != nil {
		return m, fmt.Errorf("read an outbox row to copy (does the pipeline stage run first?): %w", err)
	}
	key, err := msgauth.ParseKey(stack.RelayKey)
	if err != nil {
		return m, err
	}
	m.body = outbox.Body(m.payload)
	m.signed = key.Sign(m.body, nil)
	return m, nil
}

// attributes are the attributes the relay sends with m under key.
func (m message) attributes(key string) map[string]types.MessageAttributeValue {
	a := outbox.Attributes(m.eventType, key, "")
	maps.Copy(a, m.signed)
	return a
}

// sendRaw sends n copies of m to queue with SendMessageBatch, straight from
// Go and without a database, with the relay's chunking and calls in flight
// and its attributes, the signature's included, and returns the messages
// per second.
func sendRaw(ctx context.Context, c *sqs.Client, queue string, m message, n int) (float64, error) {
	began := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(callsInFlight)
	for first := 0; first < n; first += entriesPerCall {
		g.Go(func() error {
			entries := make([]types.SendMessageBatchRequestEntry, min(entriesPerCall, n-first))
			for i := range entries {
				entries[i] = types.SendMessageBatchRequestEntry{
					Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(m.body),
					MessageAttributes: m.attributes("bench:raw:" + strconv.Itoa(first+i)),
				}
			}
			out, err := c.SendMessageBatch(gctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queue), Entries: entries})
			if err == nil && len(out.Failed) > 0 {
				err = fmt.Errorf("%d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return 0, fmt.Errorf("raw SendMessageBatch: %w", err)
	}
	return float64(n) / time.Since(began).Seconds(), nil
}

// drainBacklog commits n copies of m to ingest.outbox in one transaction
// that notifies the relay, as outbox.Insert does, and waits until the
// running relay has published them all. It returns the time from the
// commit to the last row's publication.
func drainBacklog(ctx context.Context, db *pgxpool.Pool, m message, n int, tag string, committed func()) (time.Duration, error) {
	var first, last int64
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `WITH ins AS (
  INSERT INTO ingest.outbox (event_key, event_type, payload)
  SELECT $1 || g, $2, $3 FROM generate_series(1, $4::int) g
  RETURNING id)
SELECT min(id), max(id) FROM ins`, "bench:"+tag+":", m.eventType, m.payload, n).Scan(&first, &last)
		if err == nil {
			_, err = tx.Exec(ctx, `SELECT pg_notify($1, 'ingest.outbox')`, outbox.Channel)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("fill the outbox: %w", err)
	}
	committedAt := time.Now()
	committed()
	if err := waitPublished(ctx, db, first, last); err != nil {
		return 0, err
	}
	var parked int
	var published time.Time
	err = db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE parked_at IS NOT NULL), max(published_at)
FROM ingest.outbox WHERE id BETWEEN $1 AND $2`, first, last).Scan(&parked, &published)
	switch {
	case err != nil:
		return 0, fmt.Errorf("read the backlog's publication: %w", err)
	case parked > 0:
		return 0, fmt.Errorf("the relay parked %d backlog rows: see relay-1.log", parked)
	}
	return published.Sub(committedAt), nil
}

// waitPublished polls, through the outbox's partial index of due rows,
// until no row with an id in [first, last] is left to publish.
func waitPublished(ctx context.Context, db *pgxpool.Pool, first, last int64) error {
	for {
		var left bool
		err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ingest.outbox
WHERE published_at IS NULL AND parked_at IS NULL AND id BETWEEN $1 AND $2)`, first, last).Scan(&left)
		if err != nil {
			return fmt.Errorf("watch the backlog: %w", err)
		}
		if !left {
			return nil
		}
		if !backoff.Sleep(ctx, 20*time.Millisecond) {
			return ctx.Err()
		}
	}
}
