// Package mpsim simulates the part of Mercado Pago's API onceflow reads,
// for tests and the local stack: payments (GET /v1/payments/{id}, search
// by external_reference or by a date range), their refunds, behind an
// access token; and notifications (type payment, data.id in the URL and the
// body) signed as Mercado Pago signs them (x-signature over the manifest
// id:<data.id>;request-id:<x-request-id>;ts:<ts>;), retried with the
// sandboxes' notification faults (package sandbox/internal/notifier).
// Unauthenticated /sandbox endpoints create and steer payments. State lives
// in memory.
package mpsim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/sandbox/internal/notifier"
	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// Config configures a Server.
type Config struct {
	AccessToken   string // the only Bearer token accepted
	WebhookSecret string // signs notifications
	HTTPClient    *http.Client
	Now           func() time.Time
	// Faults are the notifications' injected misbehaviours: a payment
	// pending first is in_process, then approved; a stale notification is
	// the payment's first (payment.created) arriving after the approved
	// one. Faults.TimeScale compresses the retry schedule.
	Faults notifier.Faults
	// RetryDelay is the wait between attempts when Faults.TimeScale is 0;
	// default 1 s.
	RetryDelay time.Duration
	// Logger receives one entry per delivery event, never bodies.
	Logger *zap.Logger
}

// mpSchedule is the wait before each retry of a notification: Mercado Pago
// retries every 15 minutes, then at longer intervals (our reading of its
// page; docs/wire-mercadopago.md).
var mpSchedule = []time.Duration{
	15 * time.Minute, 15 * time.Minute, 15 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour, 48 * time.Hour, 96 * time.Hour,
}

// Server is the simulated Mercado Pago, an http.Handler; Close stops its
// deliveries.
type Server struct {
	cfg   Config
	mux   *http.ServeMux
	notes *notifier.Notifier

	mu       sync.Mutex
	notify   string
	payments map[int]*payment
	next     int
}

type payment struct {
	id, minor int64
	currency  string
	reference string
	status    string
	created   time.Time
	refunds   []refund
	notify    string // its notifications' URL; empty: the server's
}

type refund struct {
	id, minor int64
	status    string
	created   time.Time
}

// New returns an empty simulator.
func New(cfg Config) *Server {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), payments: map[int]*payment{}, next: 1000000,
		notes: notifier.New(notifier.Config{Faults: cfg.Faults, Schedule: mpSchedule, RetryDelay: cfg.RetryDelay, Logger: cfg.Logger})}
	s.mux.Handle("GET /v1/payments/search", s.auth(s.search))
	s.mux.Handle("GET /v1/payments/{id}", s.auth(s.getPayment))
	s.mux.Handle("GET /v1/payments/{id}/refunds/{rid}", s.auth(s.getRefund))
	s.mux.HandleFunc("POST /sandbox/payments", s.create)
	s.mux.HandleFunc("POST /sandbox/payments/{id}/status", s.setStatus)
	s.mux.HandleFunc("POST /sandbox/payments/{id}/refund", s.refund)
	s.mux.HandleFunc("GET /sandbox/stats", func(w http.ResponseWriter, _ *http.Request) { server.WriteJSON(w, http.StatusOK, s.notes.Counts()) })
	return s
}

// Close stops the notifications still being delivered or retried.
func (s *Server) Close() { s.notes.Close() }

// NotifyTo sends later notifications to url.
func (s *Server) NotifyTo(url string) {
	s.mu.Lock()
	s.notify = url
	s.mu.Unlock()
}

// ServeHTTP routes r.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func apiError(w http.ResponseWriter, status int, msg string) {
	server.WriteJSON(w, status, map[string]any{"message": msg, "error": http.StatusText(status), "status": status})
}

func (s *Server) auth(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.cfg.AccessToken {
			apiError(w, http.StatusUnauthorized, "invalid access token")
			return
		}
		next(w, r)
	})
}

// decimal renders minor units in currency as Mercado Pago's JSON number.
func decimal(minor int64, currency string) json.Number {
	if currency == "CLP" || currency == "PYG" {
		return json.Number(strconv.FormatInt(minor, 10))
	}
	return json.Number(money.FormatMinor(minor))
}

const dateLayout = "2006-01-02T15:04:05.000-07:00"

// view is the payment as GET /v1/payments/{id} answers it.
func (p payment) view() map[string]any {
	refunds := []map[string]any{}
	for _, r := range p.refunds {
		refunds = append(refunds, r.view(p))
	}
	return map[string]any{"id": p.id, "status": p.status, "status_detail": p.status, "currency_id": p.currency,
		"transaction_amount": decimal(p.minor, p.currency), "external_reference": p.reference,
		"date_created": p.created.Format(dateLayout), "refunds": refunds}
}

func (r refund) view(p payment) map[string]any {
	return map[string]any{"id": r.id, "payment_id": p.id, "amount": decimal(r.minor, p.currency), "status": r.status,
		"date_created": r.created.Format(dateLayout)}
}

func (s *Server) lookup(r *http.Request) (*payment, bool) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		return nil, false
	}
	p, ok := s.payments[id]
	return p, ok
}

func (s *Server) getPayment(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	p, ok := s.lookup(r)
	var v map[string]any
	if ok {
		v = p.view()
	}
	s.mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "Payment not found")
		return
	}
	server.WriteJSON(w, http.StatusOK, v)
}

func (s *Server) getRefund(w http.ResponseWriter, r *http.Request) {
	rid, _ := strconv.ParseInt(r.PathValue("rid"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.lookup(r); ok {
		for _, ref := range p.refunds {
			if ref.id == rid {
				server.WriteJSON(w, http.StatusOK, ref.view(*p))
				return
			}
		}
	}
	apiError(w, http.StatusNotFound, "Refund not found")
}

// search answers GET /v1/payments/search: external_reference, or range
// (date_created or date_last_updated) with begin_date and end_date,
// sorted by creation, limit and offset.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ref := q.Get("external_reference")
	from, _ := time.Parse(time.RFC3339, q.Get("begin_date"))
	to, err := time.Parse(time.RFC3339, q.Get("end_date"))
	if err != nil {
		to = time.Unix(1<<40, 0)
	}
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit < 1 || limit > 1000 {
		limit = 30
	}
	offset, _ := strconv.Atoi(q.Get("offset"))
	s.mu.Lock()
	var all []payment
	for _, p := range s.payments {
		when := p.created
		if q.Get("range") == "date_last_updated" && len(p.refunds) > 0 {
			when = p.refunds[len(p.refunds)-1].created
		}
		if (ref == "" || p.reference == ref) && !when.Before(from) && !when.After(to) {
			all = append(all, *p)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b payment) int { return int(a.id - b.id) })
	offset = min(max(offset, 0), len(all))
	end := min(offset+limit, len(all))
	results := []map[string]any{}
	for _, p := range all[offset:end] {
		results = append(results, p.view())
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"paging": map[string]int{"total": len(all), "limit": limit, "offset": offset}, "results": results})
}

// createRequest is /sandbox/payments' body; Silent loses the notification,
// NotifyURL sends this payment's notifications there instead of the
// server's URL.
type createRequest struct {
	Amount            json.Number `json:"amount"`
	Currency          string      `json:"currency"`
	ExternalReference string      `json:"external_reference"`
	Status            string      `json:"status"` // default approved
	Silent            bool        `json:"silent"`
	NotifyURL         string      `json:"notify_url"`
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || len(req.Currency) != 3 {
		apiError(w, http.StatusBadRequest, "want amount and a three-letter currency")
		return
	}
	cur := strings.ToUpper(req.Currency)
	minor, err := money.ParseMinor(req.Amount.String())
	if cur == "CLP" || cur == "PYG" {
		minor, err = strconv.ParseInt(req.Amount.String(), 10, 64)
	}
	if err != nil || minor <= 0 {
		apiError(w, http.StatusBadRequest, "amount: want a positive amount")
		return
	}
	if req.Status == "" {
		req.Status = "approved"
	}
	pendingFirst := req.Status == "approved" && s.notes.PendingFirst()
	if pendingFirst {
		req.Status = "in_process"
	}
	s.mu.Lock()
	s.next++
	p := &payment{id: int64(s.next), minor: minor, currency: cur, reference: req.ExternalReference, status: req.Status,
		created: s.cfg.Now(), notify: req.NotifyURL}
	s.payments[s.next] = p
	v := p.view()
	s.mu.Unlock()
	server.WriteJSON(w, http.StatusOK, v)
	if !req.Silent {
		s.notifyPayment(p.id, req.Status, "payment.created")
	}
	if pendingFirst {
		s.notes.Later(s.cfg.Faults.PendingFor, func() { s.approve(p.id) })
	}
}

// approve turns an in_process payment approved, as one approved after
// review, and notifies it.
func (s *Server) approve(id int64) {
	s.mu.Lock()
	p := s.payments[int(id)]
	p.status = "approved"
	s.mu.Unlock()
	s.notifyPayment(id, "approved", "payment.updated")
}

// notifyPayment notifies payment id, whose status is now status; an
// approved one may be followed by a stale payment.created.
func (s *Server) notifyPayment(id int64, status, action string) {
	s.send(0, id, action)
	if status == "approved" && s.notes.StaleAfterPaid() {
		s.send(s.cfg.Faults.DelayMax, id, "payment.created")
	}
}

// setStatus sets a payment's status (charged_back for a chargeback) and
// notifies it.
func (s *Server) setStatus(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Status string `json:"status"`
		Silent bool   `json:"silent"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Status == "" {
		apiError(w, http.StatusBadRequest, "want a status")
		return
	}
	s.mu.Lock()
	p, ok := s.lookup(r)
	var v map[string]any
	if ok {
		p.status = req.Status
		v = p.view()
	}
	s.mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "Payment not found")
		return
	}
	server.WriteJSON(w, http.StatusOK, v)
	if !req.Silent {
		s.notifyPayment(p.id, req.Status, "payment.updated")
	}
}

// refund refunds amount (minor units; all that is left when 0) of an
// approved payment: an approved refund on it, the payment refunded when
// nothing is left, and a payment notification, as Mercado Pago sends.
func (s *Server) refund(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AmountMinor int64 `json:"amount_minor"`
		Silent      bool  `json:"silent"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
	s.mu.Lock()
	p, ok := s.lookup(r)
	var v map[string]any
	if ok && p.status == "approved" {
		left := p.minor
		for _, ref := range p.refunds {
			left -= ref.minor
		}
		if req.AmountMinor <= 0 || req.AmountMinor > left {
			req.AmountMinor = left
		}
		s.next++
		ref := refund{id: int64(s.next), minor: req.AmountMinor, status: "approved", created: s.cfg.Now()}
		p.refunds = append(p.refunds, ref)
		if req.AmountMinor == left {
			p.status = "refunded"
		}
		v = ref.view(*p)
	}
	s.mu.Unlock()
	if v == nil {
		apiError(w, http.StatusBadRequest, "no approved payment "+r.PathValue("id"))
		return
	}
	server.WriteJSON(w, http.StatusOK, v)
	if !req.Silent {
		s.send(0, p.id, "payment.updated")
	}
}

// send delivers a notification of payment id with action to its URL (the
// server's when none), in the background with the faults, every copy held
// back by wait. Its copies and retries share the notification id; each
// attempt is signed anew with its own x-request-id.
func (s *Server) send(wait time.Duration, id int64, action string) {
	s.mu.Lock()
	target := s.notify
	if p, ok := s.payments[int(id)]; ok && p.notify != "" {
		target = p.notify
	}
	s.next++
	notification := s.next
	s.mu.Unlock()
	dataID := strconv.FormatInt(id, 10)
	body, _ := json.Marshal(map[string]any{"id": notification, "live_mode": false, "type": "payment", "action": action,
		"api_version": "v1", "date_created": s.cfg.Now().Format(dateLayout), "data": map[string]string{"id": dataID}})
	s.notes.Notify(wait, "payment", dataID, target, func(ctx context.Context, target string) (int, error) {
		return s.post(ctx, target, dataID, body)
	})
}

// post makes one signed delivery of a notification of payment dataID.
func (s *Server) post(ctx context.Context, target, dataID string, body []byte) (int, error) {
	u := target + "?" + url.Values{"data.id": {dataID}, "type": {"payment"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	requestID := uuid.NewString()
	ts := strconv.FormatInt(s.cfg.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", requestID)
	req.Header.Set("X-Signature", fmt.Sprintf("ts=%s,v1=%s", ts, Sign(s.cfg.WebhookSecret, dataID, requestID, ts)))
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// Sign is Mercado Pago's v1 signature: the hex HMAC-SHA256, keyed with the
// webhook secret, of "id:<data.id>;request-id:<request id>;ts:<ts>;".
func Sign(secret, dataID, requestID, ts string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("id:" + strings.ToLower(dataID) + ";request-id:" + requestID + ";ts:" + ts + ";"))
	return hex.EncodeToString(mac.Sum(nil))
}
