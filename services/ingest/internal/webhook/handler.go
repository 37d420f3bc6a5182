package webhook

import (
	"errors"
	"mime"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/tracing"
	"github.com/onceflow/onceflow/pkg/webhooksig"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// Handler serves POST /webhooks/:source.
type Handler struct {
	sources    map[string]Source
	store      *store.Store
	log        *zap.Logger
	received   chan<- struct{}
	receipts   *prometheus.CounterVec
	signatures *prometheus.CounterVec
	inFlight   chan struct{} // one token per request being read or recorded
	waiting    chan struct{} // one token per request waiting for a slot in inFlight
	wait       time.Duration
}

// Intake bounds the deliveries taken at once: at most MaxInFlight are read
// and recorded (at least 1); one that finds them all taken waits up to
// Wait for a slot, with at most WaitingPerSlot × MaxInFlight waiting, and
// is refused busy (503) past either bound. Waiting, a delivery has had only
// its headers read.
type Intake struct {
	MaxInFlight int
	Wait        time.Duration
}

// WaitingPerSlot bounds the deliveries waiting for a slot, per slot.
const WaitingPerSlot = 4

// NewHandler returns a handler for the sources that takes deliveries within
// the intake's bounds. received is nudged (without blocking) after each new
// receipt so a worker wakes up.
func NewHandler(sources []Source, st *store.Store, log *zap.Logger, reg prometheus.Registerer, received chan<- struct{}, in Intake) *Handler {
	slots := max(in.MaxInFlight, 1)
	h := &Handler{sources: map[string]Source{}, store: st, log: log, received: received, wait: in.Wait,
		inFlight: make(chan struct{}, slots), waiting: make(chan struct{}, WaitingPerSlot*slots),
		receipts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_ingest_receipts_total", Help: "Webhook deliveries by source and outcome (accepted, duplicate, or the refusal code).",
		}, []string{"source", "outcome"}),
		signatures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_ingest_signature_failures_total", Help: "Refused webhook signatures by source and reason (missing, malformed, mismatch, stale, future).",
		}, []string{"source", "reason"}),
	}
	for _, s := range sources {
		h.sources[s.Name] = s
	}
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "onceflow_ingest_webhooks_in_flight", Help: "Webhook deliveries being read or recorded now, out of INGEST_WEBHOOK_MAX_IN_FLIGHT.",
	}, func() float64 { return float64(len(h.inFlight)) })
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "onceflow_ingest_webhooks_waiting", Help: "Webhook deliveries waiting for a slot of INGEST_WEBHOOK_MAX_IN_FLIGHT, up to INGEST_WEBHOOK_ADMISSION_WAIT each.",
	}, func() float64 { return float64(len(h.waiting)) })
	reg.MustRegister(h.receipts, h.signatures, inFlight, waiting)
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
		return h.refuse(c, "unknown", errkind.NotFound, "unknown_source", "no webhook source named "+name)
	}
	if mt, _, _ := mime.ParseMediaType(c.Request().Header.Get("Content-Type")); mt != "application/json" {
		return h.refuseStatus(c, name, http.StatusUnsupportedMediaType, "unsupported_media_type", "want Content-Type application/json")
	}
	release, err := h.admit(c, src)
	if err != nil {
		return err
	}
	defer release()
	body, err := readBody(c, src.MaxBytes)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return h.refuseStatus(c, name, http.StatusRequestEntityTooLarge, "body_too_large", "body exceeds the source's limit")
	}
	if err != nil {
		return h.refuse(c, name, errkind.Invalid, "unreadable_body", "could not read the body")
	}
	if err := verify(src.Verifier, c.Request(), body, time.Now()); err != nil {
		return h.refuseSignature(c, name, err)
	}
	if !utf8.Valid(body) {
		// JSON is UTF-8 (RFC 8259); a decoder would quietly replace the
		// bad bytes, so two different ids could share a key.
		return h.refuse(c, name, errkind.Invalid, "invalid_body", "body is not valid UTF-8")
	}
	rec, err := src.Identify(c.Request().Header, body)
	if err != nil {
		return h.refuse(c, name, errkind.Invalid, "invalid_body", err.Error())
	}
	return h.record(c, src, rec, body)
}

// record records the receipt in a span that continues the caller's trace,
// if its request carried one, and keeps that span's context for the worker.
func (h *Handler) record(c echo.Context, src Source, rec Receipt, body []byte) error {
	ctx := tracing.WithTraceparent(c.Request().Context(), c.Request().Header.Get("traceparent"))
	ctx, span := tracing.Tracer().Start(ctx, "webhook.receive", trace.WithAttributes(
		attribute.String("onceflow.source", src.Name), attribute.String("onceflow.event_id", rec.EventID)))
	defer span.End()
	inserted, err := h.store.InsertReceipt(ctx, store.NewReceipt{
		Source: src.Name, Scope: src.Scope, Kind: string(src.Kind), DedupeKey: rec.DedupeKey,
		EventID: rec.EventID, EventType: rec.EventType, Body: body, Traceparent: tracing.Traceparent(ctx),
	})
	if err != nil {
		h.receipts.WithLabelValues(src.Name, "error").Inc()
		return err
	}
	outcome := "accepted"
	if !inserted {
		outcome = "duplicate"
	} else {
		select {
		case h.received <- struct{}{}:
		default:
		}
	}
	h.receipts.WithLabelValues(src.Name, outcome).Inc()
	h.log.Info("webhook", zap.String("request_id", httpserver.RequestID(c)), zap.String("source", src.Name),
		zap.String("event_id", rec.EventID), zap.String("event_type", rec.EventType), zap.String("outcome", outcome),
		zap.String("trace_id", span.SpanContext().TraceID().String()))
	return c.JSON(http.StatusOK, map[string]string{"status": outcome})
}

func (h *Handler) refuseSignature(c echo.Context, source string, err error) error {
	reason := webhooksig.Mismatch
	var se *webhooksig.Error
	if errors.As(err, &se) {
		reason = se.Reason
	}
	h.signatures.WithLabelValues(source, string(reason)).Inc()
	return h.refuseStatus(c, source, http.StatusUnauthorized, "invalid_signature", err.Error())
}

// refuse counts and logs a refused delivery and answers it with an error
// of kind k and code.
func (h *Handler) refuse(c echo.Context, source string, k errkind.Kind, code, message string) error {
	h.refused(c, source, code)
	return errkind.Coded(k, code, "%s", message)
}

// refuseStatus is refuse for the statuses no error kind stands for (401,
// 413, 415, 429, and the 503 of a full intake).
func (h *Handler) refuseStatus(c echo.Context, source string, status int, code, message string) error {
	h.refused(c, source, code)
	return httpserver.NewHTTPError(status, code, message)
}

func (h *Handler) refused(c echo.Context, source, code string) {
	h.receipts.WithLabelValues(source, code).Inc()
	h.log.Info("webhook refused", zap.String("request_id", httpserver.RequestID(c)), zap.String("source", source), zap.String("outcome", code))
}

// verify checks the delivery's signature, with the whole request for a
// verifier that signs more than headers and body.
func verify(v webhooksig.Verifier, r *http.Request, body []byte, now time.Time) error {
	if rv, ok := v.(RequestVerifier); ok {
		return rv.VerifyRequest(r, body, now)
	}
	return v.Verify(r.Header, body, now)
}
