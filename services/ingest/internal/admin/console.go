package admin

import (
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/board"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// registerConsole adds the endpoints the console uses: the board, the
// trace of one identifier and the reveal of a customer's personal data.
func (a *API) registerConsole(g *echo.Group) {
	g.GET("/board", a.board)
	g.GET("/trace", a.trace)
	g.POST("/customers/:id/reveal", a.reveal)
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

// revealRequest is the body of POST /admin/customers/:id/reveal.
type revealRequest struct {
	Actor  string `json:"actor"`
	Reason string `json:"reason"`
}

// reveal answers a customer's personal data to an operator. The log line
// records that a reveal happened, for which customer and through which
// request, never the data or the actor's name (the console records who).
func (a *API) reveal(c echo.Context) error {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return errkind.Coded(errkind.Invalid, "invalid_id", "id: want a customer id (a UUID)")
	}
	var req revealRequest
	if err := c.Bind(&req); err != nil || strings.TrimSpace(req.Actor) == "" || strings.TrimSpace(req.Reason) == "" {
		return errkind.Coded(errkind.Invalid, "missing_field", "body: want JSON with actor and reason")
	}
	pd, err := a.store.RevealCustomer(c.Request().Context(), id)
	if errkind.Is(err, errkind.NotFound) {
		return errkind.Coded(errkind.NotFound, "customer_not_found", "no customer with this id")
	}
	if err != nil {
		return err
	}
	a.log.Info("personal data revealed", zap.String("customer", id.String()), zap.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)))
	return c.JSON(http.StatusOK, map[string]string{"customer_id": pd.ID.String(), "doc_type": pd.DocType, "doc_country": pd.DocCountry,
		"doc_number": pd.DocNumber, "legal_name": pd.LegalName, "address": pd.Address, "city": pd.City,
		"department": pd.Department, "country": pd.Country, "email": pd.Email})
}

// TraceJSON is ingest's answer to a trace.
type TraceJSON struct {
	Orders   []map[string]any `json:"orders"`
	Payments []map[string]any `json:"payments"`
	Refunds  []map[string]any `json:"refunds"`
	Receipts []map[string]any `json:"receipts"`
	Outbox   []map[string]any `json:"outbox"`
}

func traceJSON(tr store.Trace) TraceJSON {
	out := TraceJSON{Orders: []map[string]any{}, Payments: []map[string]any{}, Refunds: []map[string]any{}, Receipts: []map[string]any{}, Outbox: []map[string]any{}}
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
