package emit

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// save writes r for d only if the claim token still holds; a late result
// from a worker whose lease expired is refused and logged.
func (e *Emitter) save(ctx context.Context, d store.InvoicerFiscalDocument, token uuid.UUID, r result) {
	p := store.DocumentSaveResultParams{
		ID: d.ID, LeaseToken: &token, Status: string(r.status), UnknownSince: r.unknownSince,
		DueAt: time.Now().Add(r.after), DgiPolls: r.dgiPolls, LastError: optional(r.lastError), AttentionReason: optional(r.attention),
		ProviderSeries: d.ProviderSeries, ProviderNumber: d.ProviderNumber, ProviderStatus: d.ProviderStatus,
		ProviderCae: d.ProviderCae, ProviderSecurityCode: d.ProviderSecurityCode, ProviderUrl: d.ProviderUrl, IssueDate: d.IssueDate,
	}
	if h := r.held; h != nil {
		p.ProviderSeries, p.ProviderNumber, p.ProviderStatus = &h.Series, &h.Number, &h.ProviderStatus
		p.ProviderCae, p.ProviderSecurityCode, p.ProviderUrl = &h.CAEID, &h.SecurityCode, &h.VerifyURL
		if !h.IssueDate.IsZero() {
			p.IssueDate = &h.IssueDate
		}
	}
	log := e.log.With(zap.Int64("document", d.ID), zap.String("reference", d.Reference), zap.String("outcome", r.outcome), zap.String("status", string(r.status)))
	n, err := e.queries.DocumentSaveResult(ctx, p)
	switch {
	case err != nil:
		log.Error("save emission result", zap.Error(err))
	case n == 0:
		log.Warn("emission result refused: the lease was lost to another worker")
	default:
		log.Info("emission attempt", zap.String("last_error", r.lastError))
	}
}

// attempt records one provider call.
func (e *Emitter) attempt(ctx context.Context, id int64, op string, start time.Time, err error) {
	outcome, msg := "ok", (*string)(nil)
	if err != nil {
		outcome, msg = "error", optional(err.Error())
	}
	if err := e.queries.AttemptInsert(ctx, store.AttemptInsertParams{
		DocumentID: id, Operation: op, Outcome: outcome, Error: msg, LatencyMs: int32(time.Since(start).Milliseconds()),
	}); err != nil {
		e.log.Warn("record emission attempt", zap.Int64("document", id), zap.Error(err))
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
