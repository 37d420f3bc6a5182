// Package pspadmin serves, on ingest's guarded /admin group, what the
// reconciler's PSP audit asks of the PSPs through ingest (which holds the
// adapters and their credentials, and owns the tables the audit compares
// with): the payments a PSP created in a period, and the recovery of one
// payment, recorded as a receipt and applied exactly as its webhook would
// have been. Refunds likewise.
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
	g.GET("/psp/refunds", a.listRefunds)
	g.POST("/psp/:psp/payments/:id/recover", a.recoverPayment)
	g.POST("/psp/:psp/refunds/:id/recover", a.recoverRefund)
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

// Refund is a PSP refund as the audit reads it.
type Refund struct {
	PSP         string    `json:"psp"`
	ID          string    `json:"id"`
	PaymentID   string    `json:"payment_id"`
	Status      string    `json:"status"`
	AmountMinor int64     `json:"amount_minor"`
	Currency    string    `json:"currency"`
	Created     time.Time `json:"created"`
}

// listRefunds answers GET /admin/psp/refunds?from=&to= as listPayments
// does: {"refunds": [...]}.
func (a *API) listRefunds(c echo.Context) error {
	from, to, err := period(c.QueryParam("from"), c.QueryParam("to"))
	if err != nil {
		return err
	}
	out := []Refund{}
	for name, t := range a.byName {
		found, err := t.adapter.RefundsCreated(c.Request().Context(), from, to)
		if err != nil {
			return errkind.Wrap(errkind.Unavailable, err, "list "+name+" refunds")
		}
		for _, r := range found {
			out = append(out, Refund{PSP: name, ID: r.ID, PaymentID: r.PaymentID, Status: r.Status,
				AmountMinor: r.AmountMinor, Currency: r.Currency, Created: r.Created})
		}
	}
	return c.JSON(http.StatusOK, map[string][]Refund{"refunds": out})
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

// recoverPayment answers POST /admin/psp/{psp}/payments/{id}/recover: it
// re-fetches the payment and records its status as a receipt in the PSP's
// scope, under the key its webhook would have, so the apply worker handles
// it as that webhook (a status already recorded is a duplicate).
func (a *API) recoverPayment(c echo.Context) error {
	return a.recover(c, "payment", func(ctx context.Context, p psp.Adapter, id string) (string, error) {
		pay, err := p.Payment(ctx, id)
		return pay.Status, err
	})
}

// recoverRefund answers POST /admin/psp/{psp}/refunds/{id}/recover as
// recoverPayment does, for a refund.
func (a *API) recoverRefund(c echo.Context) error {
	return a.recover(c, "refund", func(ctx context.Context, p psp.Adapter, id string) (string, error) {
		r, err := p.Refund(ctx, id)
		return r.Status, err
	})
}

func (a *API) recover(c echo.Context, kind string, status func(context.Context, psp.Adapter, string) (string, error)) error {
	t, ok := a.byName[c.Param("psp")]
	if !ok {
		return errkind.Coded(errkind.NotFound, "unknown_psp", "no PSP named %s is configured", c.Param("psp"))
	}
	ctx, id := c.Request().Context(), c.Param("id")
	st, err := status(ctx, t.adapter, id)
	if errkind.Is(err, errkind.NotFound) {
		return errkind.Coded(errkind.NotFound, "unknown_"+kind, "the PSP holds no %s %s", kind, id)
	}
	if err != nil {
		return errkind.Wrap(errkind.Unavailable, err, "fetch "+kind)
	}
	recorded, err := a.record(ctx, t.scope, kind, id, st)
	if err != nil {
		return err
	}
	a.log.Info("recovered for the PSP audit", zap.String("psp", t.adapter.Name()), zap.String("kind", kind), zap.String("id", id),
		zap.String("status", st), zap.Bool("recorded", recorded))
	return c.JSON(http.StatusOK, Recovery{Status: st, Recorded: recorded})
}

// record inserts object id's status as a receipt in scope and wakes a
// worker.
func (a *API) record(ctx context.Context, scope, kind, id, status string) (bool, error) {
	body, _ := json.Marshal(map[string]string{"id": id, "status": status})
	inserted, err := a.store.InsertReceipt(ctx, store.NewReceipt{Source: Source, Scope: scope, Kind: string(webhook.KindPSP),
		DedupeKey: webhook.StatusKey(kind, id, status), EventID: id, EventType: kind, Body: body})
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
