package store

import (
	"context"
	"slices"

	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store/dbsqlc"
)

// StatusCounts is the documents per status; Estimated names the statuses
// whose figure is the planner's estimate rather than a count.
type StatusCounts struct {
	Documents map[fiscal.Status]int64
	Estimated []fiscal.Status
}

// BoardCounts returns the documents per status without reading the whole
// table once it holds estimateFrom rows or more (by the planner's
// estimate): then the statuses with work ahead are counted through the
// (status, id) index and the final ones (authorized, issued, rejected,
// voided) are estimated from the column's statistics. Below that, or
// before the first ANALYZE, every status is counted.
func (s *Store) BoardCounts(ctx context.Context, estimateFrom int64) (StatusCounts, error) {
	est, err := s.EstimateByStatus(ctx)
	if err != nil {
		return StatusCounts{}, err
	}
	if int64(est.Rows) < estimateFrom { // no statistics yet, or a small table
		counts, err := s.CountByStatus(ctx)
		return StatusCounts{Documents: counts}, err
	}
	open, err := s.CountOpen(ctx)
	if err != nil {
		return StatusCounts{}, err
	}
	out := StatusCounts{Documents: open}
	for st, n := range est.ByStatus {
		if st.Final() {
			out.Documents[st] = int64(n)
			out.Estimated = append(out.Estimated, st)
		}
	}
	slices.Sort(out.Estimated)
	return out, nil
}

// OutboxStats counts the invoicer's pending and parked notification rows
// from their partial indexes.
func (s *Store) OutboxStats(ctx context.Context) (outbox.Stats, error) {
	return outbox.ReadStats(ctx, s.pool, outbox.Table{Schema: "invoicer", Name: "outbox"})
}

// Notification is a notification outbox row without its payload.
type Notification dbsqlc.TraceNotificationsRow

// TraceDocuments returns the documents q names: a reference, a payment or
// refund id (the document's source, or the payment a credit note refunds),
// or series and number (number > 0).
func (s *Store) TraceDocuments(ctx context.Context, q, series string, number int64) ([]Document, error) {
	rows, err := s.q.TraceDocuments(ctx, q, series, number)
	if err != nil {
		return nil, pg.Interpret(err, "trace documents")
	}
	out := make([]Document, len(rows))
	for i, r := range rows {
		out[i] = documentFromRow(r)
	}
	return out, nil
}

// Notifications returns the notification rows of the document with
// reference.
func (s *Store) Notifications(ctx context.Context, reference string) ([]Notification, error) {
	rows, err := s.q.TraceNotifications(ctx, "document:"+reference+":", "document:"+reference+";")
	if err != nil {
		return nil, pg.Interpret(err, "notifications of %s", reference)
	}
	out := make([]Notification, len(rows))
	for i, r := range rows {
		out[i] = Notification(r)
	}
	return out, nil
}
