package admin

import (
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/board"
	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/reveals"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// registerConsole adds the endpoints the console uses: the board, the
// trace of one identifier, the reveal of a customer's personal data or a
// case's evidence, and the record of those reveals.
func (a *API) registerConsole(g *echo.Group) {
	g.GET("/board", a.board)
	g.GET("/trace", a.trace)
	g.POST("/customers/:id/reveal", a.reveal)
	g.POST("/cases/:id/reveal", a.revealCase)
	reveals.Register(g, "ingest", a.store)
}

// Board is ingest's part of the pipeline board.
type Board struct {
	Receipts board.Stage       `json:"receipts"`
	Outbox   board.Stage       `json:"outbox"`
	Cases    []board.CaseCount `json:"cases"`
}

// board answers from the receipts' and outbox's partial indexes and the
// open cases' index: its cost follows the backlog, not the tables.
func (a *API) board(c echo.Context) error {
	ctx := c.Request().Context()
	backlog, err := a.store.ReceiptBacklog(ctx)
	if err != nil {
		return err
	}
	parked, err := a.store.ReceiptParked(ctx)
	if err != nil {
		return err
	}
	ob, err := a.store.OutboxStats(ctx)
	if err != nil {
		return err
	}
	stats, err := a.store.OpenCaseStats(ctx)
	if err != nil {
		return err
	}
	b := Board{Receipts: board.Stage{Pending: backlog.Pending, Parked: parked}, Outbox: board.OutboxStage(ob), Cases: board.Cases(stats)}
	if !backlog.Oldest.IsZero() {
		t := backlog.Oldest.UTC()
		b.Receipts.Oldest = &t
	}
	return c.JSON(http.StatusOK, b)
}

// trace answers GET /admin/trace?q=: what ingest holds about the payments
// q names; bodies and payloads are never part of it.
func (a *API) trace(c echo.Context) error {
	q := strings.TrimSpace(c.QueryParam("q"))
	if q == "" || len(q) > 200 {
		return errkind.Coded(errkind.Invalid, "invalid_q", "q: want an identifier of 1 to 200 characters")
	}
	tr, err := a.store.Trace(c.Request().Context(), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, traceJSON(tr))
}

// reveal answers a customer's personal data to an operator, after
// recording who asked and why (ingest.reveals, listed by GET
// /admin/reveals): no data leaves without its record. The log line names
// the customer and the request, never the data, the actor or the reason.
func (a *API) reveal(c echo.Context) error {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return errkind.Coded(errkind.Invalid, "invalid_id", "id: want a customer id (a UUID)")
	}
	req, err := reveals.Bind(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	pd, err := a.store.RevealCustomer(ctx, id)
	if errkind.Is(err, errkind.NotFound) {
		return errkind.Coded(errkind.NotFound, "customer_not_found", "no customer with this id")
	}
	if err != nil {
		return err
	}
	rec, err := a.store.RecordReveal(ctx, reveals.Customer(id.String()), req)
	if err != nil {
		return err
	}
	a.log.Info("personal data revealed", zap.String("customer", id.String()), zap.Int64("reveal", rec.ID),
		zap.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)))
	return c.JSON(http.StatusOK, map[string]any{"customer_id": pd.ID.String(), "doc_type": pd.DocType, "doc_country": pd.DocCountry,
		"doc_number": pd.DocNumber, "legal_name": pd.LegalName, "address": pd.Address, "city": pd.City,
		"department": pd.Department, "country": pd.Country, "email": pd.Email, "reveal_id": rec.ID})
}

// revealCase answers a case with its evidence unmasked, after recording
// who asked and why.
func (a *API) revealCase(c echo.Context) error {
	id, err := caseID(c)
	if err != nil {
		return err
	}
	req, err := reveals.Bind(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	k, err := a.store.Case(ctx, id)
	if errkind.Is(err, errkind.NotFound) {
		return errkind.Coded(errkind.NotFound, "case_not_found", "no case with this id")
	}
	if err != nil {
		return err
	}
	rec, err := a.store.RecordReveal(ctx, reveals.Case(cases.ID("ingest", id)), req)
	if err != nil {
		return err
	}
	a.log.Info("case evidence revealed", zap.Int64("case", id), zap.Int64("reveal", rec.ID))
	return c.JSON(http.StatusOK, caseJSON(k))
}

// TraceJSON is ingest's answer to a trace.
type TraceJSON struct {
	Orders   []map[string]any `json:"orders"`
	Payments []map[string]any `json:"payments"`
	Refunds  []map[string]any `json:"refunds"`
	Receipts []map[string]any `json:"receipts"`
	Outbox   []map[string]any `json:"outbox"`
	Fetches  []map[string]any `json:"psp_fetches"`
}

func traceJSON(tr store.Trace) TraceJSON {
	out := TraceJSON{Orders: []map[string]any{}, Payments: []map[string]any{}, Refunds: []map[string]any{}, Receipts: []map[string]any{}, Outbox: []map[string]any{},
		Fetches: []map[string]any{}}
	for _, o := range tr.Orders {
		out.Orders = append(out.Orders, map[string]any{"id": o.ID, "merchant_order_id": o.MerchantOrderID, "customer_id": o.CustomerID,
			"amount_minor": o.AmountMinor, "currency": o.Currency, "created_at": o.CreatedAt})
	}
	for _, p := range tr.Payments {
		out.Payments = append(out.Payments, map[string]any{"id": p.ID, "order_id": p.OrderID, "status": p.Status, "amount_minor": p.AmountMinor,
			"currency": p.Currency, "paid_at": p.PaidAt, "created_at": p.CreatedAt, "updated_at": p.UpdatedAt})
	}
	for _, r := range tr.Refunds {
		out.Refunds = append(out.Refunds, map[string]any{"id": r.ID, "payment_id": r.PaymentID, "status": r.Status, "amount_minor": r.AmountMinor,
			"currency": r.Currency, "succeeded_at": r.SucceededAt, "created_at": r.CreatedAt, "updated_at": r.UpdatedAt})
	}
	for _, r := range tr.Receipts {
		// A receipt is stored only once its signature verified: the
		// verdict of every stored receipt is "verified".
		out.Receipts = append(out.Receipts, map[string]any{"id": r.ID, "source": r.Source, "event_id": r.EventID, "event_type": r.EventType,
			"signature": "verified", "status": r.Status, "attempts": r.Attempts, "last_error": r.LastError, "trace_id": traceID(r.Traceparent),
			"received_at": r.ReceivedAt, "processed_at": r.ProcessedAt})
	}
	for _, r := range tr.Outbox {
		out.Outbox = append(out.Outbox, map[string]any{"id": r.ID, "event_key": r.EventKey, "event_type": r.EventType, "trace_id": traceID(r.Traceparent),
			"created_at": r.CreatedAt, "attempts": r.Attempts, "last_error": r.LastError, "published_at": r.PublishedAt,
			"parked_at": r.ParkedAt, "parked_reason": r.ParkedReason})
	}
	for _, f := range tr.Fetches {
		out.Fetches = append(out.Fetches, map[string]any{"psp": f.PSP, "operation": f.Operation, "object_id": f.ObjectID,
			"outcome": f.Outcome, "latency_ms": f.Latency.Milliseconds(), "at": f.At})
	}
	return out
}

// traceID is the trace id of a W3C traceparent, or "" when there is none
// (an all-zero id is the invalid one an untraced process records).
func traceID(traceparent string) string {
	parts := strings.Split(traceparent, "-")
	if len(parts) != 4 || strings.Trim(parts[1], "0") == "" {
		return ""
	}
	return parts[1]
}
