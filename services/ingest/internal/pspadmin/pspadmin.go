// Package pspadmin serves, on ingest's guarded /admin group, what the
// reconciler's PSP audit asks of the PSPs through ingest (which holds the
// adapters and their credentials, and owns the tables the audit compares
// with): the payments a PSP created in a period, and the recovery of one
// payment, recorded as a receipt and applied exactly as its webhook would
// have been.
package pspadmin

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// Source is the source name of the receipts a recovery records.
const Source = "audit"

// maxPeriod bounds one listing.
const maxPeriod = 31 * 24 * time.Hour

// API serves the PSP audit's routes.
type API struct {
	store  *store.Store
	byName map[string]target
	log    *zap.Logger
	wake   chan<- struct{}
}

// target is a PSP's adapter and the dedupe scope of its sources.
type target struct {
	scope   string
	adapter psp.Adapter
}

// New returns the API over the adapters keyed by dedupe scope; a recovery
// nudges wake so an apply worker looks at once.
func New(st *store.Store, adapters map[string]psp.Adapter, log *zap.Logger, wake chan<- struct{}) *API {
	byName := map[string]target{}
	for scope, a := range adapters {
		byName[a.Name()] = target{scope: scope, adapter: a}
	}
	return &API{store: st, byName: byName, log: log, wake: wake}
}

// Register adds the routes to g, the guarded /admin group.
func (a *API) Register(g *echo.Group) {
	g.GET("/psp/payments", a.listPayments)
	g.POST("/psp/:psp/payments/:id/recover", a.recover)
}

// Payment is a PSP payment as the audit reads it: no buyer data, only the
// money, its status and our order reference.
type Payment struct {
	PSP         string    `json:"psp"`
	ID          string    `json:"id"`
	Status      string    `json:"status"`
	AmountMinor int64     `json:"amount_minor"`
	Currency    string    `json:"currency"`
	OrderID     string    `json:"order_id"`
	Created     time.Time `json:"created"`
}

// listPayments answers GET /admin/psp/payments?from=&to= (RFC 3339, the
// period [from, to) of the payments' creation) with every configured PSP's
// payments: {"payments": [...]}. A PSP that cannot be listed fails the
// whole answer (503), so the audit never takes a partial ledger for all.
func (a *API) listPayments(c echo.Context) error {
	from, to, err := period(c.QueryParam("from"), c.QueryParam("to"))
	if err != nil {
		return err
	}
	out := []Payment{}
	for name, t := range a.byName {
		found, err := t.adapter.PaymentsCreated(c.Request().Context(), from, to)
		if err != nil {
			return errkind.Wrap(errkind.Unavailable, err, "list "+name+" payments")
		}
		for _, p := range found {
			out = append(out, Payment{PSP: name, ID: p.ID, Status: p.Status, AmountMinor: p.AmountMinor,
				Currency: p.Currency, OrderID: p.OrderID, Created: p.Created})
		}
	}
	return c.JSON(http.StatusOK, map[string][]Payment{"payments": out})
}

// period reads from and to, naming the parameter at fault.
func period(fromText, toText string) (from, to time.Time, err error) {
	if from, err = time.Parse(time.RFC3339, fromText); err != nil {
		return from, to, errkind.Coded(errkind.Invalid, "invalid_param", "from: want an RFC 3339 time")
	}
	if to, err = time.Parse(time.RFC3339, toText); err != nil {
		return from, to, errkind.Coded(errkind.Invalid, "invalid_param", "to: want an RFC 3339 time")
	}
	if !from.Before(to) || to.Sub(from) > maxPeriod {
		return from, to, errkind.Coded(errkind.Invalid, "invalid_param", "from, to: want from before to, at most 31 days apart")
	}
	return from, to, nil
}

// Recovery is the answer of a recovery: the status the PSP holds now and
// whether it was a new receipt (false: that status was recorded already).
type Recovery struct {
	Status   string `json:"status"`
	Recorded bool   `json:"recorded"`
}

// recover answers POST /admin/psp/{psp}/payments/{id}/recover: it
// re-fetches the payment and records its status as a receipt in the PSP's
// scope, under the key its webhook would have, so the apply worker handles
// it as that webhook (a status already recorded is a duplicate).
func (a *API) recover(c echo.Context) error {
	t, ok := a.byName[c.Param("psp")]
	if !ok {
		return errkind.Coded(errkind.NotFound, "unknown_psp", "no PSP named %s is configured", c.Param("psp"))
	}
	ctx := c.Request().Context()
	p, err := t.adapter.Payment(ctx, c.Param("id"))
	if errkind.Is(err, errkind.NotFound) {
		return errkind.Coded(errkind.NotFound, "unknown_payment", "the PSP holds no payment %s", c.Param("id"))
	}
	if err != nil {
		return errkind.Wrap(errkind.Unavailable, err, "fetch payment")
	}
	recorded, err := a.record(ctx, t.scope, p)
	if err != nil {
		return err
	}
	a.log.Info("payment recovered for the PSP audit", zap.String("psp", t.adapter.Name()), zap.String("id", p.ID),
		zap.String("status", p.Status), zap.Bool("recorded", recorded))
	return c.JSON(http.StatusOK, Recovery{Status: p.Status, Recorded: recorded})
}

// record inserts p's status as a receipt in scope and wakes a worker.
func (a *API) record(ctx context.Context, scope string, p psp.Payment) (bool, error) {
	body, _ := json.Marshal(map[string]string{"id": p.ID, "status": p.Status})
	inserted, err := a.store.InsertReceipt(ctx, store.NewReceipt{Source: Source, Scope: scope, Kind: string(webhook.KindPSP),
		DedupeKey: webhook.StatusKey("payment", p.ID, p.Status), EventID: p.ID, EventType: "payment", Body: body})
	if err != nil {
		return false, err
	}
	if inserted {
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
	return inserted, nil
}
