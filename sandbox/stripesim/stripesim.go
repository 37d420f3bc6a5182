// Package stripesim simulates the part of Stripe's API onceflow reads, for
// tests and the local stack: PaymentIntents (retrieve, search by metadata,
// list by creation time), Refunds and Charges, behind a secret key; and
// webhook events (snapshot events, with the object in data.object) signed
// as Stripe signs them (Stripe-Signature: t=…,v1=…, computed with
// stripe-go's webhook package), retried on Stripe's schedule with the
// sandboxes' notification faults (package sandbox/internal/notifier).
// Unauthenticated /sandbox endpoints create and steer objects. State lives
// in memory.
package stripesim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/stripe/stripe-go/v84/webhook"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/sandbox/internal/notifier"
	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// Config configures a Server.
type Config struct {
	// APIKey is the only secret key accepted (Authorization: Bearer).
	APIKey string
	// WebhookSecret signs events (whsec_…).
	WebhookSecret string
	// NotifyURL receives events; empty sends none.
	NotifyURL string
	// HTTPClient sends events; default http.DefaultClient.
	HTTPClient *http.Client
	// Now is the clock of created times and signatures; default time.Now.
	Now func() time.Time
	// Faults are the events' injected misbehaviours: a payment pending
	// first is processing, then succeeded; a stale event is a processing
	// snapshot after the succeeded one. Faults.TimeScale compresses
	// Stripe's retry schedule.
	Faults notifier.Faults
	// RetryDelay is the wait between attempts when Faults.TimeScale is 0;
	// default 1 s.
	RetryDelay time.Duration
	// Logger receives one entry per delivery event, never bodies.
	Logger *zap.Logger
}

// stripeSchedule is the wait before each retry of an event: Stripe retries
// for up to three days with an exponential back-off (1 minute, doubling).
var stripeSchedule = []time.Duration{
	time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute,
	64 * time.Minute, 128 * time.Minute, 256 * time.Minute, 512 * time.Minute, 1024 * time.Minute, 2048 * time.Minute,
}

// Server is the simulated Stripe, an http.Handler; Close stops its
// deliveries.
type Server struct {
	cfg   Config
	mux   *http.ServeMux
	notes *notifier.Notifier

	mu       sync.Mutex
	notify   string
	intents  map[string]*intent
	refunds  map[string]*refund
	sequence int
}

// intent is a PaymentIntent and its one charge.
type intent struct {
	ID       string            `json:"id"`
	Object   string            `json:"object"`
	Amount   int64             `json:"amount"`
	Currency string            `json:"currency"`
	Status   string            `json:"status"`
	Metadata map[string]string `json:"metadata"`
	Created  int64             `json:"created"`
	// Presentment is what the customer was charged when it differs from
	// Amount and Currency (Adaptive Pricing); nil otherwise.
	Presentment *presentment `json:"presentment_details,omitempty"`
	Charge      charge       `json:"-"`
	seq         int
	notify      string // its events' URL; empty: the server's
}

// presentment is Stripe's presentment_details: the amount and currency
// presented to (and charged to) the customer.
type presentment struct {
	Amount   int64  `json:"presentment_amount"`
	Currency string `json:"presentment_currency"`
}

// charge is a Charge as onceflow reads it.
type charge struct {
	ID            string `json:"id"`
	Object        string `json:"object"`
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	Disputed      bool   `json:"disputed"`
	PaymentIntent string `json:"payment_intent"`
}

// refund is a Refund.
type refund struct {
	ID            string `json:"id"`
	Object        string `json:"object"`
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	Status        string `json:"status"`
	PaymentIntent string `json:"payment_intent"`
	Charge        string `json:"charge"`
	Created       int64  `json:"created"`
	// Presentment is the refund in the currency the customer was charged
	// in, for a PaymentIntent charged in another; nil otherwise.
	Presentment *presentment `json:"presentment_details,omitempty"`
}

// New returns an empty simulator.
func New(cfg Config) *Server {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, notify: cfg.NotifyURL, mux: http.NewServeMux(), intents: map[string]*intent{}, refunds: map[string]*refund{},
		notes: notifier.New(notifier.Config{Faults: cfg.Faults, Schedule: stripeSchedule, RetryDelay: cfg.RetryDelay, Logger: cfg.Logger})}
	s.mux.Handle("GET /v1/payment_intents/search", s.auth(s.search))
	s.mux.Handle("GET /v1/payment_intents/{id}", s.auth(s.getIntent))
	s.mux.Handle("GET /v1/payment_intents", s.auth(s.list))
	s.mux.Handle("GET /v1/refunds/{id}", s.auth(s.getRefund))
	s.mux.Handle("GET /v1/refunds", s.auth(s.listRefunds))
	s.mux.Handle("GET /v1/charges/{id}", s.auth(s.getCharge))
	s.mux.HandleFunc("POST /sandbox/payment_intents", s.create)
	s.mux.HandleFunc("POST /sandbox/payment_intents/{id}/status", s.setStatus)
	s.mux.HandleFunc("POST /sandbox/payment_intents/{id}/refund", s.refund)
	s.mux.HandleFunc("POST /sandbox/payment_intents/{id}/dispute", s.dispute)
	s.mux.HandleFunc("POST /sandbox/payment_intents/{id}/notify", s.notifyAgain)
	s.mux.HandleFunc("GET /sandbox/stats", func(w http.ResponseWriter, _ *http.Request) { server.WriteJSON(w, http.StatusOK, s.notes.Counts()) })
	return s
}

// Close stops the events still being delivered or retried.
func (s *Server) Close() { s.notes.Close() }

// NotifyTo sends later events to url (for a receiver started after the
// simulator).
func (s *Server) NotifyTo(url string) {
	s.mu.Lock()
	s.notify = url
	s.mu.Unlock()
}

// ServeHTTP routes r.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// apiError is Stripe's error body.
func apiError(w http.ResponseWriter, status int, typ, code, msg string) {
	server.WriteJSON(w, status, map[string]any{"error": map[string]string{"type": typ, "code": code, "message": msg}})
}

func notFound(w http.ResponseWriter, what string) {
	apiError(w, http.StatusNotFound, "invalid_request_error", "resource_missing", "No such "+what)
}

// auth accepts only the configured secret key.
func (s *Server) auth(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.cfg.APIKey {
			apiError(w, http.StatusUnauthorized, "invalid_request_error", "", "Invalid API Key provided")
			return
		}
		next(w, r)
	})
}

// view renders pi with its charge expanded when the request asks for it.
func (pi intent) view(expand bool) map[string]any {
	b, _ := json.Marshal(pi)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	m["latest_charge"] = pi.Charge.ID
	if expand {
		m["latest_charge"] = pi.Charge
	}
	return m
}

// expands reports whether r's expand[] parameters name field.
func expands(r *http.Request, field string) bool {
	for k, vs := range r.URL.Query() {
		if strings.HasPrefix(k, "expand") && slices.Contains(vs, field) {
			return true
		}
	}
	return false
}

func (s *Server) getIntent(w http.ResponseWriter, r *http.Request) {
	pi, ok := s.intent(r.PathValue("id"))
	if !ok {
		notFound(w, "payment_intent")
		return
	}
	server.WriteJSON(w, http.StatusOK, pi.view(expands(r, "latest_charge")))
}

func (s *Server) getCharge(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pi := range s.intents {
		if pi.Charge.ID == r.PathValue("id") {
			server.WriteJSON(w, http.StatusOK, pi.Charge)
			return
		}
	}
	notFound(w, "charge")
}

func (s *Server) getRefund(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ref, ok := s.refunds[r.PathValue("id")]
	var out refund
	if ok {
		out = *ref
	}
	s.mu.Unlock()
	if !ok {
		notFound(w, "refund")
		return
	}
	server.WriteJSON(w, http.StatusOK, out)
}

// intent returns a snapshot of PaymentIntent id.
func (s *Server) intent(id string) (intent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pi, ok := s.intents[id]
	if !ok {
		return intent{}, false
	}
	return *pi, true
}

// sorted returns snapshots of the intents keep selects, in creation order.
func (s *Server) sorted(keep func(*intent) bool) []intent {
	s.mu.Lock()
	var out []intent
	for _, pi := range s.intents {
		if keep(pi) {
			out = append(out, *pi)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b intent) int { return a.seq - b.seq })
	return out
}

// searchQuery is the one query form the simulator answers.
var searchQuery = regexp.MustCompile(`^metadata\['([a-z_]+)'\]:'((?:[^'\\]|\\.)*)'$`)

// search answers GET /v1/payment_intents/search?query=metadata['k']:'v',
// one page at a time (page is the offset, as an opaque token).
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	m := searchQuery.FindStringSubmatch(r.URL.Query().Get("query"))
	if m == nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", "query: only metadata['key']:'value' is simulated")
		return
	}
	key, value := m[1], strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(m[2])
	all := s.sorted(func(pi *intent) bool { return pi.Metadata[key] == value })
	start, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page, more := window(all, start, limit(r))
	out := map[string]any{"object": "search_result", "url": "/v1/payment_intents/search", "data": views(page, expands(r, "data.latest_charge")),
		"has_more": more, "next_page": nil}
	if more {
		out["next_page"] = strconv.Itoa(start + len(page))
	}
	server.WriteJSON(w, http.StatusOK, out)
}

// list answers GET /v1/payment_intents with created[gte], created[lt],
// limit and starting_after.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	gte, _ := strconv.ParseInt(q.Get("created[gte]"), 10, 64)
	lt, err := strconv.ParseInt(q.Get("created[lt]"), 10, 64)
	if err != nil {
		lt = 1 << 62
	}
	all := s.sorted(func(pi *intent) bool { return pi.Created >= gte && pi.Created < lt })
	start := 0
	if after := q.Get("starting_after"); after != "" {
		start = slices.IndexFunc(all, func(pi intent) bool { return pi.ID == after }) + 1
	}
	page, more := window(all, start, limit(r))
	server.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "url": "/v1/payment_intents",
		"data": views(page, expands(r, "data.latest_charge")), "has_more": more})
}

// listRefunds answers GET /v1/refunds with created[gte], created[lt],
// limit and starting_after.
func (s *Server) listRefunds(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	gte, _ := strconv.ParseInt(q.Get("created[gte]"), 10, 64)
	lt, err := strconv.ParseInt(q.Get("created[lt]"), 10, 64)
	if err != nil {
		lt = 1 << 62
	}
	s.mu.Lock()
	var all []refund
	for _, ref := range s.refunds {
		if ref.Created >= gte && ref.Created < lt {
			all = append(all, *ref)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b refund) int { return strings.Compare(a.ID, b.ID) })
	start := 0
	if after := q.Get("starting_after"); after != "" {
		start = slices.IndexFunc(all, func(ref refund) bool { return ref.ID == after }) + 1
	}
	start = min(start, len(all))
	end := min(start+limit(r), len(all))
	server.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "url": "/v1/refunds", "data": all[start:end], "has_more": end < len(all)})
}

func limit(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || n < 1 || n > 100 {
		return 10
	}
	return n
}

func window(all []intent, start, n int) ([]intent, bool) {
	start = min(max(start, 0), len(all))
	end := min(start+n, len(all))
	return all[start:end], end < len(all)
}

func views(pis []intent, expand bool) []map[string]any {
	out := make([]map[string]any, len(pis))
	for i, pi := range pis {
		out[i] = pi.view(expand)
	}
	return out
}

// createRequest is /sandbox/payment_intents' body. Silent loses the event;
// NotifyURL sends this PaymentIntent's events there instead of the
// server's URL.
type createRequest struct {
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	OrderID   string `json:"order_id"`
	Status    string `json:"status"` // default succeeded
	Silent    bool   `json:"silent"`
	NotifyURL string `json:"notify_url"`
	// PresentmentAmount and PresentmentCurrency, when set, are what the
	// customer was charged (presentment_details), Amount and Currency
	// staying the merchant's.
	PresentmentAmount   int64  `json:"presentment_amount"`
	PresentmentCurrency string `json:"presentment_currency"`
}

// create makes a PaymentIntent (succeeded unless told) and sends its event.
// A succeeded one may start processing and succeed Faults.PendingFor later.
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Amount <= 0 || len(req.Currency) != 3 {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", "want amount > 0 and a three-letter currency")
		return
	}
	if req.Status == "" {
		req.Status = "succeeded"
	}
	pendingFirst := req.Status == "succeeded" && s.notes.PendingFirst()
	if pendingFirst {
		req.Status = "processing"
	}
	id := "pi_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24]
	cur := strings.ToLower(req.Currency)
	s.mu.Lock()
	s.sequence++
	pi := &intent{ID: id, Object: "payment_intent", Amount: req.Amount, Currency: cur, Status: req.Status,
		Metadata: map[string]string{"order_id": req.OrderID}, Created: s.cfg.Now().Unix(), seq: s.sequence, notify: req.NotifyURL,
		Charge: charge{ID: "ch_" + id[3:], Object: "charge", Amount: req.Amount, Currency: cur, PaymentIntent: id}}
	if req.OrderID == "" {
		pi.Metadata = map[string]string{}
	}
	if req.PresentmentCurrency != "" {
		pi.Presentment = &presentment{Amount: req.PresentmentAmount, Currency: strings.ToLower(req.PresentmentCurrency)}
	}
	s.intents[id] = pi
	snapshot := *pi
	s.mu.Unlock()
	server.WriteJSON(w, http.StatusOK, snapshot.view(false))
	if !req.Silent {
		s.notifyIntent(snapshot)
	}
	if pendingFirst {
		s.notes.Later(s.cfg.Faults.PendingFor, func() { s.succeed(id) })
	}
}

// succeed turns a processing PaymentIntent succeeded, as a payment
// confirmed after review, and sends its event.
func (s *Server) succeed(id string) {
	s.mu.Lock()
	pi, ok := s.intents[id]
	var snapshot intent
	if ok {
		pi.Status = "succeeded"
		snapshot = *pi
	}
	s.mu.Unlock()
	if ok {
		s.notifyIntent(snapshot)
	}
}

// notifyIntent sends pi's event; a succeeded one may be followed by a
// stale processing snapshot.
func (s *Server) notifyIntent(pi intent) {
	s.send(0, "payment_intent."+eventVerb(pi.Status), pi.ID, pi.notify, pi.view(false))
	if pi.Status == "succeeded" && s.notes.StaleAfterPaid() {
		stale := pi
		stale.Status = "processing"
		s.send(s.cfg.Faults.DelayMax, "payment_intent.processing", pi.ID, pi.notify, stale.view(false))
	}
}

// eventVerb is the event type's verb of a PaymentIntent status.
func eventVerb(status string) string {
	switch status {
	case "succeeded":
		return "succeeded"
	case "canceled":
		return "canceled"
	case "processing":
		return "processing"
	}
	return "requires_action"
}

// setStatus changes a PaymentIntent's status and sends its event.
func (s *Server) setStatus(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Status string `json:"status"`
		Silent bool   `json:"silent"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Status == "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "parameter_invalid", "want a status")
		return
	}
	s.mu.Lock()
	pi, ok := s.intents[r.PathValue("id")]
	var snapshot intent
	if ok {
		pi.Status = req.Status
		snapshot = *pi
	}
	s.mu.Unlock()
	if !ok {
		notFound(w, "payment_intent")
		return
	}
	server.WriteJSON(w, http.StatusOK, snapshot.view(false))
	if !req.Silent {
		s.notifyIntent(snapshot)
	}
}

// refund refunds amount (all when 0) of a succeeded PaymentIntent.
func (s *Server) refund(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Amount int64 `json:"amount"`
		Silent bool  `json:"silent"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
	s.mu.Lock()
	pi, ok := s.intents[r.PathValue("id")]
	var ref refund
	var url string
	if ok && pi.Status == "succeeded" {
		url = pi.notify
		if req.Amount <= 0 || req.Amount > pi.Amount {
			req.Amount = pi.Amount
		}
		ref = refund{ID: "re_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24], Object: "refund", Amount: req.Amount,
			Currency: pi.Currency, Status: "succeeded", PaymentIntent: pi.ID, Charge: pi.Charge.ID, Created: s.cfg.Now().Unix(),
			Presentment: s.presentedRefund(pi, req.Amount)}
		stored := ref
		s.refunds[ref.ID] = &stored
	}
	s.mu.Unlock()
	if ref.ID == "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "charge_not_refundable", "no succeeded payment_intent "+r.PathValue("id"))
		return
	}
	server.WriteJSON(w, http.StatusOK, ref)
	if !req.Silent {
		s.send(0, "refund.created", ref.ID, url, ref)
	}
}

// presentedRefund is a refund of amount of pi in the currency pi was
// charged in, or nil when pi was charged in its own. Each refund takes the
// proportion of the charged amount that the refunds so far, it included,
// take of pi's, less what the earlier ones took: rounding never makes
// them add up to more than was charged. The caller holds s.mu.
func (s *Server) presentedRefund(pi *intent, amount int64) *presentment {
	if pi.Presentment == nil {
		return nil
	}
	var refunded, presented int64
	for _, ref := range s.refunds {
		if ref.PaymentIntent == pi.ID && ref.Presentment != nil {
			refunded, presented = refunded+ref.Amount, presented+ref.Presentment.Amount
		}
	}
	total := new(big.Int).Mul(big.NewInt(refunded+amount), big.NewInt(pi.Presentment.Amount))
	total.Add(total, big.NewInt(pi.Amount/2)).Quo(total, big.NewInt(pi.Amount))
	return &presentment{Amount: total.Int64() - presented, Currency: pi.Presentment.Currency}
}

// dispute marks a succeeded PaymentIntent's charge disputed (the funds are
// withdrawn) and sends charge.dispute.created.
func (s *Server) dispute(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	pi, ok := s.intents[r.PathValue("id")]
	var ch charge
	var url string
	if ok && pi.Status == "succeeded" {
		pi.Charge.Disputed = true
		ch, url = pi.Charge, pi.notify
	}
	s.mu.Unlock()
	if ch.ID == "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "charge_not_disputable", "no succeeded payment_intent "+r.PathValue("id"))
		return
	}
	dp := map[string]any{"id": "dp_" + ch.ID[3:], "object": "dispute", "amount": ch.Amount, "currency": ch.Currency,
		"charge": ch.ID, "payment_intent": ch.PaymentIntent, "status": "needs_response"}
	server.WriteJSON(w, http.StatusOK, dp)
	s.send(0, "charge.dispute.created", ch.PaymentIntent, url, dp)
}

// notifyAgain sends a PaymentIntent's current event once more, at once
// and without retries, and answers the receiver's status (0: not sent).
func (s *Server) notifyAgain(w http.ResponseWriter, r *http.Request) {
	pi, ok := s.intent(r.PathValue("id"))
	if !ok {
		notFound(w, "payment_intent")
		return
	}
	url, body := s.event("payment_intent."+eventVerb(pi.Status), pi.notify, pi.view(false))
	status := 0
	if url != "" {
		status, _ = s.post(r.Context(), url, body)
	}
	server.WriteJSON(w, http.StatusOK, map[string]int{"status": status})
}

// send delivers a snapshot event of type typ carrying object (id, for the
// logs) to url (the server's when empty), signed with the webhook secret,
// in the background with the faults, every copy held back by wait.
func (s *Server) send(wait time.Duration, typ, id, url string, object any) {
	url, body := s.event(typ, url, object)
	s.notes.Notify(wait, typ, id, url, func(ctx context.Context, url string) (int, error) { return s.post(ctx, url, body) })
}

// event is the target and body of a new event: one id for all its copies
// and retries, as Stripe's.
func (s *Server) event(typ, url string, object any) (string, []byte) {
	if url == "" {
		s.mu.Lock()
		url = s.notify
		s.mu.Unlock()
	}
	body, _ := json.Marshal(map[string]any{"id": "evt_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24], "object": "event",
		"type": typ, "created": s.cfg.Now().Unix(), "api_version": "2025-10-29.clover", "data": map[string]any{"object": object}})
	return url, body
}

// post makes one delivery of body, signed now, and returns the status.
func (s *Server) post(ctx context.Context, url string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	now := s.cfg.Now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", fmt.Sprintf("t=%d,v1=%x", now.Unix(), webhook.ComputeSignature(now, body, s.cfg.WebhookSecret)))
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
