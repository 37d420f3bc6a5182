package admin

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/notify"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Resolution is the body of POST /admin/documents/:id/resolve.
type Resolution struct {
	// Action is adopt (take the provider's document Series/Number as ours),
	// retry (back to pending as never sent, once the operator has checked
	// the provider; with look-up it is still looked up before any send) or
	// void (give the document up; nothing more is sent).
	Action string `json:"action"`
	Actor  string `json:"actor"`  // who decides
	Reason string `json:"reason"` // why
	Series string `json:"series,omitempty"`
	Number int64  `json:"number,omitempty"`
}

// errChanged means the document left needs_attention meanwhile.
var errChanged = errkind.Coded(errkind.Conflict, "not_needs_attention", "only a document in needs_attention can be resolved")

// resolve serves POST /admin/documents/:id/resolve.
func (a *API) resolve(c echo.Context) error {
	var r Resolution
	if err := decode(c, &r); err != nil {
		return err
	}
	if err := r.validate(); err != nil {
		return err
	}
	d, err := a.document(c)
	if err != nil {
		return err
	}
	if d.Status != fiscal.StatusNeedsAttention {
		return errChanged
	}
	ctx := c.Request().Context()
	change, adopt, err := a.plan(ctx, d, r)
	if err != nil {
		return err
	}
	if err := a.apply(ctx, d, r, change, adopt); err != nil {
		return err
	}
	a.log.Info("document resolved", zap.Int64("document", d.ID), zap.String("action", r.Action), zap.String("to", string(change.Status)))
	updated, err := a.store.Document(ctx, d.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"document": view(updated)})
}

func (r *Resolution) validate() error {
	r.Actor, r.Reason = strings.TrimSpace(r.Actor), strings.TrimSpace(r.Reason)
	switch {
	case r.Action != "adopt" && r.Action != "retry" && r.Action != "void":
		return errkind.Coded(errkind.Invalid, "invalid_action", "action: want adopt, retry or void")
	case r.Actor == "" || r.Reason == "":
		return errkind.Coded(errkind.Invalid, "missing_actor_or_reason", "actor and reason are required")
	case r.Action == "adopt" && r.Number <= 0:
		return errkind.Coded(errkind.Invalid, "missing_number", "adopt: want the provider document's series and number")
	}
	return nil
}

// plan decides the document's new state; for adopt it returns the
// provider's document, found by a look-up made outside any transaction.
func (a *API) plan(ctx context.Context, d store.Document, r Resolution) (notify.Change, *fiscal.Held, error) {
	switch r.Action {
	case "retry":
		return notify.Change{Status: fiscal.StatusPending}, nil, nil
	case "void":
		return notify.Change{Status: fiscal.StatusVoided}, nil, nil
	}
	h, err := a.pick(ctx, d, r)
	if err != nil {
		return notify.Change{}, nil, err
	}
	st := h.Status
	if !st.Final() {
		st = fiscal.StatusPendingDGI // polled from now on
	}
	return notify.Change{Status: st, Series: h.Series, Number: h.Number, Provider: h}, &h, nil
}

// pick finds the provider document r names under d's reference.
func (a *API) pick(ctx context.Context, d store.Document, r Resolution) (fiscal.Held, error) {
	if a.lookup == nil {
		return fiscal.Held{}, errkind.Coded(errkind.Conflict, "no_lookup", "the provider cannot be looked up; retry or void instead")
	}
	held, err := a.lookup(ctx, d.Reference)
	if err != nil {
		a.log.Warn("operator look-up failed", zap.Int64("document", d.ID), zap.Error(err))
		// Ambiguous is the kind answered with 502, the status this has
		// always had: the provider, not this service, failed.
		return fiscal.Held{}, errkind.Coded(errkind.Ambiguous, "provider_unavailable", "look-up at the provider failed; try again")
	}
	for _, h := range held {
		if h.Series == r.Series && h.Number == r.Number {
			if h.Type != d.CFEType {
				return fiscal.Held{}, errkind.Coded(errkind.Refused, "type_mismatch",
					"that provider document is of type %d, not %d", h.Type, d.CFEType)
			}
			return h, nil
		}
	}
	return fiscal.Held{}, errkind.Coded(errkind.Refused, "not_held", "the provider holds no such series and number under this document's reference")
}

// apply moves d to change, records the resolution and queues the
// notification, in one transaction; adopting a document DGI rejected opens
// its document_rejected case, as the emitter would.
func (a *API) apply(ctx context.Context, d store.Document, r Resolution, change notify.Change, h *fiscal.Held) error {
	err := notify.Commit(ctx, a.store, a.wake, func(tx *store.Tx) error {
		var moved bool
		var err error
		if r.Action == "retry" {
			moved, err = tx.Retry(ctx, d.ID)
		} else {
			moved, err = tx.AdoptStatus(ctx, adoption(d, change, h))
		}
		if err != nil {
			return err
		}
		if !moved {
			return errChanged
		}
		if err := tx.InsertResolution(ctx, store.Resolution{DocumentID: d.ID, Action: r.Action, Actor: r.Actor,
			Reason: r.Reason, FromStatus: d.Status, ToStatus: change.Status}); err != nil {
			return err
		}
		if err := tx.CloseCaseOf(ctx, cases.NeedsAttention, store.DocumentSubject(d.ID),
			store.Closing{Actor: r.Actor, Action: r.Action, Reason: r.Reason}); err != nil {
			return err
		}
		if change.Status == fiscal.StatusRejected && h != nil { // adopted a rejected CFE: re-issuing it is a case
			if _, err := tx.OpenCase(ctx, store.RejectedCase(d, h.ProviderStatus)); err != nil {
				return err
			}
		}
		return notify.Insert(ctx, tx, d, change)
	})
	if err == nil {
		a.valid.Observe(d, change.Status)
	}
	return err
}

// adoption moves d to change, with the provider's fields of h when set.
func adoption(d store.Document, change notify.Change, h *fiscal.Held) store.Adoption {
	p := store.Adoption{ID: d.ID, FromStatus: d.Status, Status: change.Status}
	if h != nil {
		p.ProviderStatus, p.ProviderSeries, p.ProviderNumber = &h.ProviderStatus, &h.Series, &h.Number
		p.ProviderCAE, p.ProviderSecurityCode, p.ProviderURL = &h.CAEID, &h.SecurityCode, &h.VerifyURL
		p.ProviderCAEFrom, p.ProviderCAETo, p.ProviderCAEExpires = store.CAERange(*h)
		if !h.IssueDate.IsZero() {
			p.IssueDate = &h.IssueDate
		}
	}
	return p
}
