package admin

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/notify"
	store "github.com/onceflow/onceflow/services/invoicer/internal/store/dbsqlc"
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
var errChanged = httpserver.NewHTTPError(http.StatusConflict, "not_needs_attention", "only a document in needs_attention can be resolved")

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
	if d.Status != string(fiscal.StatusNeedsAttention) {
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
	updated, err := a.queries.DocumentGet(ctx, d.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"document": view(updated)})
}

func (r *Resolution) validate() error {
	r.Actor, r.Reason = strings.TrimSpace(r.Actor), strings.TrimSpace(r.Reason)
	switch {
	case r.Action != "adopt" && r.Action != "retry" && r.Action != "void":
		return httpserver.NewHTTPError(http.StatusBadRequest, "invalid_action", "action: want adopt, retry or void")
	case r.Actor == "" || r.Reason == "":
		return httpserver.NewHTTPError(http.StatusBadRequest, "missing_actor_or_reason", "actor and reason are required")
	case r.Action == "adopt" && r.Number <= 0:
		return httpserver.NewHTTPError(http.StatusBadRequest, "missing_number", "adopt: want the provider document's series and number")
	}
	return nil
}

// plan decides the document's new state; for adopt it returns the
// provider's document, found by a look-up made outside any transaction.
func (a *API) plan(ctx context.Context, d store.InvoicerFiscalDocument, r Resolution) (notify.Change, *fiscal.Held, error) {
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
	return notify.Change{Status: st, Series: h.Series, Number: h.Number}, &h, nil
}

// pick finds the provider document r names under d's reference.
func (a *API) pick(ctx context.Context, d store.InvoicerFiscalDocument, r Resolution) (fiscal.Held, error) {
	if a.lookup == nil {
		return fiscal.Held{}, httpserver.NewHTTPError(http.StatusConflict, "no_lookup", "the provider cannot be looked up; retry or void instead")
	}
	held, err := a.lookup(ctx, d.Reference)
	if err != nil {
		a.log.Warn("operator look-up failed", zap.Int64("document", d.ID), zap.Error(err))
		return fiscal.Held{}, httpserver.NewHTTPError(http.StatusBadGateway, "provider_unavailable", "look-up at the provider failed; try again")
	}
	for _, h := range held {
		if h.Series == r.Series && h.Number == r.Number {
			if h.Type != fiscal.CFEType(d.CfeType) {
				return fiscal.Held{}, httpserver.NewHTTPError(http.StatusUnprocessableEntity, "type_mismatch",
					"that provider document is of type "+strconv.Itoa(int(h.Type))+", not "+strconv.Itoa(int(d.CfeType)))
			}
			return h, nil
		}
	}
	return fiscal.Held{}, httpserver.NewHTTPError(http.StatusUnprocessableEntity, "not_held", "the provider holds no such series and number under this document's reference")
}

// apply moves d to change, records the resolution and queues the
// notification, in one transaction.
func (a *API) apply(ctx context.Context, d store.InvoicerFiscalDocument, r Resolution, change notify.Change, h *fiscal.Held) error {
	return notify.Commit(ctx, a.pool, a.wake, func(tx pgx.Tx) error {
		q := a.queries.WithTx(tx)
		var n int64
		var err error
		if r.Action == "retry" {
			n, err = q.DocumentRetry(ctx, d.ID)
		} else {
			n, err = q.DocumentAdoptStatus(ctx, adoptParams(d, change, h))
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return errChanged
		}
		if err := q.ResolutionInsert(ctx, store.ResolutionInsertParams{DocumentID: d.ID, Action: r.Action, Actor: r.Actor,
			Reason: r.Reason, FromStatus: d.Status, ToStatus: string(change.Status)}); err != nil {
			return err
		}
		return notify.Insert(ctx, tx, d, change)
	})
}

func adoptParams(d store.InvoicerFiscalDocument, change notify.Change, h *fiscal.Held) store.DocumentAdoptStatusParams {
	p := store.DocumentAdoptStatusParams{ID: d.ID, FromStatus: d.Status, Status: string(change.Status)}
	if h != nil {
		p.ProviderStatus, p.ProviderSeries, p.ProviderNumber = &h.ProviderStatus, &h.Series, &h.Number
		p.ProviderCae, p.ProviderSecurityCode, p.ProviderUrl = &h.CAEID, &h.SecurityCode, &h.VerifyURL
		if !h.IssueDate.IsZero() {
			p.IssueDate = &h.IssueDate
		}
	}
	return p
}
