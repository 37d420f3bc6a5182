package webhook

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// Handler serves POST /webhooks/:source.
type Handler struct {
	sources  map[string]Source
	queries  *store.Queries
	log      *zap.Logger
	maxBytes int64
	received chan<- struct{}
	receipts *prometheus.CounterVec
}

// NewHandler returns a handler for sources keyed by route name. received is
// nudged (without blocking) after each new receipt so the worker wakes up.
func NewHandler(sources map[string]Source, q *store.Queries, log *zap.Logger, reg prometheus.Registerer, maxBytes int64, received chan<- struct{}) *Handler {
	h := &Handler{sources: sources, queries: q, log: log, maxBytes: maxBytes, received: received,
		receipts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_ingest_receipts_total", Help: "Webhook deliveries by source and outcome.",
		}, []string{"source", "outcome"})}
	reg.MustRegister(h.receipts)
	return h
}

// Register adds the webhook route to e.
func (h *Handler) Register(e *echo.Echo) {
	e.POST("/webhooks/:source", h.receive)
}

func (h *Handler) receive(c echo.Context) error {
	name := c.Param("source")
	src, ok := h.sources[name]
	if !ok {
		// The label is fixed: a caller must not be able to mint metric series.
		return h.refuse(c, "unknown", http.StatusNotFound, "unknown_source", "no webhook source named "+name)
	}
	if mt, _, _ := mime.ParseMediaType(c.Request().Header.Get("Content-Type")); mt != "application/json" {
		return h.refuse(c, name, http.StatusUnsupportedMediaType, "unsupported_media_type", "want Content-Type application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, h.maxBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return h.refuse(c, name, http.StatusRequestEntityTooLarge, "body_too_large", "body exceeds the source's limit")
	}
	if err != nil {
		return h.refuse(c, name, http.StatusBadRequest, "unreadable_body", "could not read the body")
	}
	if err := src.Verify(c.Request().Header, body); err != nil {
		return h.refuse(c, name, http.StatusUnauthorized, "invalid_signature", err.Error())
	}
	rec, err := src.Identify(body)
	if err != nil {
		return h.refuse(c, name, http.StatusBadRequest, "invalid_body", err.Error())
	}
	return h.store(c, name, rec, body)
}

func (h *Handler) store(c echo.Context, name string, rec Receipt, body []byte) error {
	n, err := h.queries.ReceiptInsert(c.Request().Context(), store.ReceiptInsertParams{
		Source: name, DedupeKey: rec.DedupeKey, EventID: rec.EventID, EventType: rec.EventType, Body: body,
	})
	if err != nil {
		h.receipts.WithLabelValues(name, "error").Inc()
		return err
	}
	outcome := "accepted"
	if n == 0 {
		outcome = "duplicate"
	} else {
		select {
		case h.received <- struct{}{}:
		default:
		}
	}
	h.receipts.WithLabelValues(name, outcome).Inc()
	h.log.Info("webhook", zap.String("source", name), zap.String("event_id", rec.EventID),
		zap.String("event_type", rec.EventType), zap.String("outcome", outcome))
	return c.JSON(http.StatusOK, map[string]string{"status": outcome})
}

func (h *Handler) refuse(c echo.Context, source string, status int, code, message string) error {
	h.receipts.WithLabelValues(source, code).Inc()
	h.log.Info("webhook refused", zap.String("source", source), zap.String("outcome", code))
	return httpserver.NewHTTPError(status, code, message)
}
