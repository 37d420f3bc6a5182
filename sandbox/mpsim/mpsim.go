// Package mpsim simulates the part of Mercado Pago's API onceflow reads,
// for tests and the local stack: payments (GET /v1/payments/{id}, search
// by external_reference or by a date range), their refunds, behind an
// access token; and notifications (type payment, data.id in the URL and the
// body) signed as Mercado Pago signs them (x-signature over the manifest
// id:<data.id>;request-id:<x-request-id>;ts:<ts>;). Unauthenticated
// /sandbox endpoints create and steer payments. State lives in memory.
package mpsim

import (
	"bytes"
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

	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// Config configures a Server.
type Config struct {
	AccessToken   string // the only Bearer token accepted
	WebhookSecret string // signs notifications
	HTTPClient    *http.Client
	Now           func() time.Time
}

// Server is the simulated Mercado Pago, an http.Handler.
type Server struct {
	cfg Config
	mux *http.ServeMux

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
	s := &Server{cfg: cfg, mux: http.NewServeMux(), payments: map[int]*payment{}, next: 1000000}
	s.mux.Handle("GET /v1/payments/search", s.auth(s.search))
	s.mux.Handle("GET /v1/payments/{id}", s.auth(s.getPayment))
	s.mux.Handle("GET /v1/payments/{id}/refunds/{rid}", s.auth(s.getRefund))
	s.mux.HandleFunc("POST /sandbox/payments", s.create)
	s.mux.HandleFunc("POST /sandbox/payments/{id}/status", s.setStatus)
	s.mux.HandleFunc("POST /sandbox/payments/{id}/refund", s.refund)
	return s
}

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

// createRequest is /sandbox/payments' body; Silent loses the notification.
type createRequest struct {
	Amount            json.Number `json:"amount"`
	Currency          string      `json:"currency"`
	ExternalReference string      `json:"external_reference"`
	Status            string      `json:"status"` // default approved
	Silent            bool        `json:"silent"`
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
	s.mu.Lock()
	s.next++
	p := &payment{id: int64(s.next), minor: minor, currency: cur, reference: req.ExternalReference, status: req.Status, created: s.cfg.Now()}
	s.payments[s.next] = p
	v := p.view()
	s.mu.Unlock()
	server.WriteJSON(w, http.StatusOK, v)
	if !req.Silent {
		s.send(p.id)
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
		s.send(p.id)
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
		s.send(p.id)
	}
}

// send posts a payment notification for payment id, signed, once; it
// returns the receiver's status (0: not sent).
func (s *Server) send(id int64) int {
	s.mu.Lock()
	target := s.notify
	s.next++
	notification := s.next
	s.mu.Unlock()
	if target == "" {
		return 0
	}
	now := s.cfg.Now()
	dataID := strconv.FormatInt(id, 10)
	body, _ := json.Marshal(map[string]any{"id": notification, "live_mode": false, "type": "payment", "action": "payment.updated",
		"api_version": "v1", "date_created": now.Format(dateLayout), "data": map[string]string{"id": dataID}})
	u := target + "?" + url.Values{"data.id": {dataID}, "type": {"payment"}}.Encode()
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	requestID := uuid.NewString()
	ts := strconv.FormatInt(now.Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", requestID)
	req.Header.Set("X-Signature", fmt.Sprintf("ts=%s,v1=%s", ts, Sign(s.cfg.WebhookSecret, dataID, requestID, ts)))
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// Sign is Mercado Pago's v1 signature: the hex HMAC-SHA256, keyed with the
// webhook secret, of "id:<data.id>;request-id:<request id>;ts:<ts>;".
func Sign(secret, dataID, requestID, ts string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("id:" + strings.ToLower(dataID) + ";request-id:" + requestID + ";ts:" + ts + ";"))
	return hex.EncodeToString(mac.Sum(nil))
}
