package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/pkg/lease"
	"github.com/onceflow/onceflow/pkg/outbox"
)

const (
	entriesPerCall = 10 // the most SendMessageBatch accepts
	callsInFlight  = 4  // concurrent SendMessageBatch calls per batch
	maxReasonBytes = 1000
)

// chunk is the messages of one SendMessageBatch call.
type chunk struct {
	queue string // URL
	msgs  []envelope
}

// envelope is a row as it is sent: its batch entry, attributes and
// signature included, built once, and the size SQS counts against its
// limits.
type envelope struct {
	row   outbox.Row
	entry types.SendMessageBatchRequestEntry
	size  int
}

// outcome is what SQS answered for one row.
type outcome struct {
	row    outbox.Row
	queue  string
	reason string // empty when SQS accepted the message
	fatal  bool   // SQS blames the request itself: resending cannot help
	unsure bool   // the call's answer was lost: SQS may hold the message
}

// failure is a row to record as failed: retried at next, or parked.
type failure struct {
	row    outbox.Row
	queue  string // empty when the row was never sent
	reason string
	next   time.Time
	park   bool
	unsure bool // the send may have reached SQS after all
}

// claim returns up to a batch of sh's due rows in id order after the id
// after, leaving out the ids of rows already in flight.
func (r *Relay) claim(ctx context.Context, sh *shard, after int64, inFlight []int64) ([]outbox.Row, error) {
	ctx, cancel := context.WithTimeout(ctx, r.renewEvery())
	defer cancel()
	return outbox.DueIn(ctx, r.pool, r.outbox.Table, sh.slots, r.s.BatchSize, after, inFlight)
}

// deliver sends claimed rows of sh and records the results under the
// fence of sh's lease; an error wrapping lease.ErrDeposed means nothing was recorded.
// Once rows are claimed their batch runs to the end even if ctx is
// cancelled, within deadlines derived from the lease TTL.
func (r *Relay) deliver(ctx context.Context, sh *shard, token int64, rows []outbox.Row) error {
	start := time.Now()
	work := context.WithoutCancel(ctx)
	chunks, failures := r.plan(rows)
	published, failed := r.judge(r.sendAll(work, chunks))
	failures = append(failures, failed...)
	err := r.record(work, sh, token, published, failures)
	r.metrics.unconfirmed.WithLabelValues(r.name).Add(float64(unconfirmed(published, failures, err)))
	if err != nil {
		return err
	}
	r.observe(published, failures, time.Since(start))
	return nil
}

// plan groups rows into SendMessageBatch calls per queue and parks the rows
// that cannot be sent: those of an unrouted type and oversize ones.
func (r *Relay) plan(rows []outbox.Row) ([]chunk, []failure) {
	var parked []failure
	var queues []string
	byQueue := map[string][]envelope{}
	for _, row := range rows {
		route, ok := r.outbox.Match(row.EventType)
		if !ok {
			parked = append(parked, r.parkNow(row, "no route for type "+row.EventType))
			continue
		}
		m := r.envelope(row)
		if m.size > r.s.MaxMessageBytes {
			parked = append(parked, r.parkNow(row, fmt.Sprintf(
				"message of %d bytes exceeds RELAY_MAX_MESSAGE_BYTES=%d", m.size, r.s.MaxMessageBytes)))
			continue
		}
		if _, seen := byQueue[route.Queue]; !seen {
			queues = append(queues, route.Queue)
			byQueue[route.Queue] = make([]envelope, 0, len(rows))
		}
		byQueue[route.Queue] = append(byQueue[route.Queue], m)
	}
	var chunks []chunk
	for _, q := range queues {
		chunks = append(chunks, r.split(q, byQueue[q])...)
	}
	return chunks, parked
}

func (r *Relay) parkNow(row outbox.Row, reason string) failure {
	return failure{row: row, reason: reason, next: time.Now(), park: true}
}

// split cuts one queue's messages into calls of at most ten entries whose
// sizes add up to at most MaxBatchBytes, SQS's limit for a whole batch
// request. The calls share msgs' array.
func (r *Relay) split(queue string, msgs []envelope) []chunk {
	out := make([]chunk, 0, (len(msgs)+entriesPerCall-1)/entriesPerCall)
	first, size := 0, 0
	for i, m := range msgs {
		if i-first == entriesPerCall || (i > first && size+m.size > r.s.MaxBatchBytes) {
			out = append(out, chunk{queue: queue, msgs: msgs[first:i]})
			first, size = i, 0
		}
		size += m.size
	}
	if first < len(msgs) {
		out = append(out, chunk{queue: queue, msgs: msgs[first:]})
	}
	return out
}

// sendAll sends every chunk, callsInFlight at a time. It never fails as a
// whole: each row gets its own outcome.
func (r *Relay) sendAll(ctx context.Context, chunks []chunk) []outcome {
	ctx, cancel := context.WithTimeout(ctx, r.renewEvery())
	defer cancel()
	results := make([][]outcome, len(chunks))
	var g errgroup.Group
	g.SetLimit(callsInFlight)
	for i, c := range chunks {
		g.Go(func() error {
			results[i] = r.sendChunk(ctx, c)
			return nil
		})
	}
	_ = g.Wait()
	return slices.Concat(results...)
}

func (r *Relay) sendChunk(ctx context.Context, c chunk) []outcome {
	entries := make([]types.SendMessageBatchRequestEntry, len(c.msgs))
	for i, m := range c.msgs {
		entries[i] = m.entry
	}
	out, err := r.sender.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(c.queue), Entries: entries})
	answers := make(map[string]outcome, len(c.msgs))
	if err == nil {
		for _, s := range out.Successful {
			answers[aws.ToString(s.Id)] = outcome{}
		}
		for _, f := range out.Failed {
			answers[aws.ToString(f.Id)] = outcome{reason: aws.ToString(f.Code) + ": " + aws.ToString(f.Message), fatal: f.SenderFault}
		}
	}
	outcomes := make([]outcome, len(c.msgs))
	for i, m := range c.msgs {
		o, ok := answers[aws.ToString(m.entry.Id)]
		switch {
		case err != nil:
			o = outcome{reason: "send message batch: " + err.Error(), unsure: mayHaveSent(err)}
		case !ok:
			o = outcome{reason: "SQS returned no result for the entry"}
		}
		o.row, o.queue = m.row, c.queue
		outcomes[i] = o
	}
	return outcomes
}

// judge splits outcomes into published rows and failures, deciding each
// failure's retry time and whether it is parked.
func (r *Relay) judge(outcomes []outcome) (published []outcome, failures []failure) {
	for _, o := range outcomes {
		if o.reason == "" {
			published = append(published, o)
			continue
		}
		attempt := o.row.Attempts + 1
		failures = append(failures, failure{
			row: o.row, queue: o.queue, reason: o.reason,
			next: time.Now().Add(r.s.Backoff.Delay(attempt)),
			park: o.fatal || attempt >= r.s.MaxAttempts, unsure: o.unsure,
		})
	}
	return published, failures
}

// record writes the batch's results in one transaction that first checks
// the lease's fence, so a deposed relay changes nothing. A batch wholly
// published, the usual one, is one statement behind the fence.
func (r *Relay) record(ctx context.Context, sh *shard, token int64, published []outcome, failures []failure) error {
	ctx, cancel := context.WithTimeout(ctx, r.s.LeaseTTL)
	defer cancel()
	if len(failures) == 0 && len(published) > 0 {
		return r.recordPublished(ctx, sh, token, published)
	}
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("record batch: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := sh.lease.Fence(ctx, tx, token); err != nil {
		return fmt.Errorf("record batch: %w", err)
	}
	if len(published) > 0 {
		if err := outbox.MarkPublished(ctx, tx, r.outbox.Table, publishedIDs(published)); err != nil {
			return fmt.Errorf("record batch: %w", err)
		}
	}
	for _, f := range failures {
		if err := outbox.MarkFailed(ctx, tx, r.outbox.Table, f.row.ID, truncate(f.reason), f.next, f.park); err != nil {
			return fmt.Errorf("record batch: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("record batch: commit: %w", err)
	}
	return nil
}

// recordPublished marks published, behind the fence of sh's lease, in one
// statement committed on its own.
func (r *Relay) recordPublished(ctx context.Context, sh *shard, token int64, published []outcome) error {
	fence, args := sh.lease.FenceClause(token, 2)
	held, err := outbox.MarkPublishedFenced(ctx, r.pool, r.outbox.Table, publishedIDs(published), fence, args)
	switch {
	case err != nil:
		return fmt.Errorf("record batch: %w", err)
	case !held:
		return fmt.Errorf("record batch: %w", lease.ErrDeposed)
	}
	return nil
}

// unconfirmed counts the rows of a batch that SQS may hold without the
// outbox saying so and that the relay will send again: those whose send
// lost its answer (unless recorded as parked), and the published ones when
// recording failed with recErr.
func unconfirmed(published []outcome, failures []failure, recErr error) int {
	n := 0
	for _, f := range failures {
		if f.unsure && (!f.park || recErr != nil) {
			n++
		}
	}
	if recErr != nil {
		n += len(published)
	}
	return n
}

// mayHaveSent reports whether a SendMessageBatch call that failed with err
// may have stored its messages all the same: it did unless no connection
// was made or SQS refused the request whole with a client fault. A timeout
// or a server fault leaves it unknown.
func mayHaveSent(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorFault() == smithy.FaultClient {
		return false
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "dial"
}

// publishedIDs are the outbox ids of published.
func publishedIDs(published []outcome) []int64 {
	ids := make([]int64, len(published))
	for i, o := range published {
		ids[i] = o.row.ID
	}
	return ids
}

// observe counts and logs a recorded batch.
func (r *Relay) observe(published []outcome, failures []failure, took time.Duration) {
	perQueue := map[string]int{}
	for _, o := range published {
		perQueue[o.queue]++
	}
	for queue, n := range perQueue {
		r.metrics.published.WithLabelValues(r.name, queueLabel(queue)).Add(float64(n))
	}
	for _, f := range failures {
		fields := []zap.Field{zap.Int64("id", f.row.ID), zap.String("event_key", f.row.EventKey),
			zap.String("event_type", f.row.EventType), zap.Int("attempts", f.row.Attempts+1), zap.String("reason", truncate(f.reason))}
		if f.queue != "" {
			r.metrics.failed.WithLabelValues(r.name, queueLabel(f.queue)).Inc()
			fields = append(fields, zap.String("queue", queueLabel(f.queue)))
		}
		if f.park {
			r.metrics.parked.WithLabelValues(r.name).Inc()
			r.log.Error("parked outbox row", fields...)
			continue
		}
		r.log.Warn("send failed; will retry", append(fields, zap.Time("next_attempt_at", f.next))...)
	}
	r.metrics.batch.WithLabelValues(r.name).Observe(took.Seconds())
	r.log.Debug("batch done", zap.Int("published", len(published)), zap.Int("failed", len(failures)), zap.Duration("took", took))
}

// attributes are the message attributes consumers route and trace on.
func attributes(row outbox.Row) map[string]types.MessageAttributeValue {
	return outbox.Attributes(row.EventType, row.EventKey, row.Traceparent)
}

// envelope builds row's batch entry, its attributes signed with the relay's
// key when it has one (Settings.Signer), and measures it as SQS does: the
// body plus each attribute's name, data type and value.
func (r *Relay) envelope(row outbox.Row) envelope {
	body := outbox.Body(row.Payload)
	attrs := attributes(row)
	if r.s.Signer != nil {
		r.s.Signer.Add(body, attrs)
	}
	size := len(body)
	for name, v := range attrs {
		size += len(name) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue))
	}
	return envelope{row: row, size: size, entry: types.SendMessageBatchRequestEntry{
		Id: aws.String(strconv.FormatInt(row.ID, 10)), MessageBody: aws.String(body), MessageAttributes: attrs,
	}}
}

// queueLabel turns a queue URL into its name for metrics and logs.
func queueLabel(queue string) string {
	return queue[strings.LastIndex(queue, "/")+1:]
}

func truncate(s string) string {
	if len(s) <= maxReasonBytes {
		return s
	}
	return strings.ToValidUTF8(s[:maxReasonBytes], "")
}
