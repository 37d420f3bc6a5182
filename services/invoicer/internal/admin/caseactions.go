package admin

import (
	"context"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/notify"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// errDocumentMoved means the case's document changed meanwhile, so the
// action no longer fits it.
var errDocumentMoved = errkind.Coded(errkind.Conflict, "document_changed", "the case's document changed meanwhile; look again")

// resolveAttention closes a needs_attention case through the document's own
// resolution (adopt, retry or void), which closes the case with it.
func (a *API) resolveAttention(c echo.Context, x store.Case, r CaseResolution) error {
	ctx := c.Request().Context()
	d, err := a.store.Document(ctx, *x.DocumentID)
	if err != nil {
		return err
	}
	res := Resolution{Action: r.Action, Actor: r.Actor, Reason: r.Reason, Series: r.Series, Number: r.Number}
	if err := res.validate(); err != nil {
		return err
	}
	if d.Status != fiscal.StatusNeedsAttention {
		return errChanged
	}
	change, adopt, err := a.plan(ctx, d, res)
	if err != nil {
		return err
	}
	return a.apply(ctx, d, res, change, adopt)
}

// resolveDocumentCase applies a document_rejected or document_refused
// case's action to its document and closes the case, in one transaction:
// retry makes a refused document due now with its refusals reset (or only
// closes the case when a later attempt got the document through); void
// gives it up; reissue records a corrected copy under the next revision
// (a refused original is given up first, a rejected one is kept as it is)
// and makes the credit notes waiting for a re-issued invoice due.
func (a *API) resolveDocumentCase(c echo.Context, x store.Case, r CaseResolution) error {
	ctx := c.Request().Context()
	d, err := a.store.Document(ctx, *x.DocumentID)
	if err != nil {
		return err
	}
	var reissued *store.Document
	err = notify.Commit(ctx, a.store, a.wake, func(tx *store.Tx) error {
		var err error
		if reissued, err = a.act(ctx, tx, x, d, r.Action); err != nil {
			return err
		}
		_, err = tx.CloseCase(ctx, store.Closing{ID: x.ID, Actor: r.Actor, Action: r.Action, Reason: r.Reason})
		return err
	})
	if err != nil {
		return err
	}
	log := a.log.With(zap.Int64("case", x.ID), zap.String("kind", x.Kind), zap.String("action", r.Action), zap.Int64("document", d.ID))
	if reissued != nil {
		log = log.With(zap.Int64("reissued_as", reissued.ID), zap.String("reference", reissued.Reference))
	}
	log.Info("case resolved")
	return nil
}

// act applies action to d, the document of case x, inside tx; for reissue
// it returns the new document.
func (a *API) act(ctx context.Context, tx *store.Tx, x store.Case, d store.Document, action string) (*store.Document, error) {
	moved := true
	var err error
	switch {
	case action == "retry" && d.Status.Valid():
		// A later attempt went through on its own: nothing to retry.
	case action == "retry":
		moved, err = tx.RetryRefused(ctx, d.ID)
	case action == "void" || (action == "reissue" && x.Kind == cases.DocumentRefused):
		moved, err = tx.Void(ctx, d.ID, d.Status)
	case action == "reissue":
		moved = d.Status == fiscal.StatusRejected
	}
	if err != nil {
		return nil, err
	}
	if !moved {
		return nil, errDocumentMoved
	}
	if action != "reissue" {
		return nil, nil
	}
	n, err := tx.Reissue(ctx, d)
	if err != nil {
		return nil, err
	}
	if d.Kind == fiscal.KindInvoice && d.SourceKind == "payment" {
		if _, err := tx.MakeCreditNotesDue(ctx, d.SourceRef); err != nil {
			return nil, err
		}
	}
	return &n, nil
}
