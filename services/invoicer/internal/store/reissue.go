package store

import (
	"context"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/provider/fiscal"
)

// Reissue records the corrected copy of d under its next revision and the
// first of that revision's references (fiscal.RevisionReferences) no
// document holds; d is kept as it is. A second re-issue of d is an error of
// kind Conflict.
func (q queries) Reissue(ctx context.Context, d Document) (Document, error) {
	refs := fiscal.RevisionReferences(d.SourceKind, d.SourceRef, d.Kind, int(d.Revision)+1)
	r, err := q.q.DocumentReissue(ctx, refs, d.ID)
	if err != nil {
		return Document{}, pg.Interpret(err, "re-issue document %d", d.ID)
	}
	return documentFromRow(r), nil
}

// MakeCreditNotesDue makes the credit notes waiting for payment's invoice
// due now; it returns how many.
func (q queries) MakeCreditNotesDue(ctx context.Context, payment string) (int64, error) {
	n, err := q.q.DocumentMakeCreditNotesDue(ctx, &payment)
	if err != nil {
		return 0, pg.Interpret(err, "make credit notes of payment %s due", payment)
	}
	return n, nil
}

// RetryRefused makes document id, still waiting to be sent, due now with
// its refusal count reset; it reports false when it was no longer waiting.
func (q queries) RetryRefused(ctx context.Context, id int64) (bool, error) {
	n, err := q.q.DocumentRetryRefused(ctx, id)
	if err != nil {
		return false, pg.Interpret(err, "retry document %d", id)
	}
	return n > 0, nil
}

// Void gives document id up if its status is still from, pending or
// unknown (never a document the provider holds): it is never sent again.
// It reports false otherwise.
func (q queries) Void(ctx context.Context, id int64, from fiscal.Status) (bool, error) {
	n, err := q.q.DocumentVoid(ctx, id, string(from))
	if err != nil {
		return false, pg.Interpret(err, "void document %d", id)
	}
	return n > 0, nil
}
