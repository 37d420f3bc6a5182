package pspsim

import (
	"encoding/json"
	"net/http"
	"strconv"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// maxCopies bounds ?copies= on the resend endpoints.
const maxCopies = 100

// resendPayment re-sends the payment's current state ?copies=N times (default
// 1), synchronously and without retries, and answers {"sent": n} with the
// number of copies the receiver accepted with 2xx.
func (s *Server) resendPayment(w http.ResponseWriter, r *http.Request) {
	p, ok := s.payment(r.PathValue("id"))
	if !ok {
		writeError(w, errPaymentNotFound)
		return
	}
	s.resend(w, r, "payment", p.ID, s.target(p.NotificationURL), p)
}

// resendRefund is resendPayment for refunds.
func (s *Server) resendRefund(w http.ResponseWriter, r *http.Request) {
	ref, ok := s.refund(r.PathValue("id"))
	if !ok {
		writeError(w, errRefundNotFound)
		return
	}
	s.resend(w, r, "refund", ref.ID, s.target(ref.NotificationURL), ref)
}

func (s *Server) resend(w http.ResponseWriter, r *http.Request, kind, id, url string, object any) {
	copies := 1
	if q := r.URL.Query().Get("copies"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 || n > maxCopies {
			writeError(w, errInvalidCopies)
			return
		}
		copies = n
	}
	if url == "" {
		writeError(w, errNoNotifyURL)
		return
	}
	body, err := json.Marshal(object)
	if err != nil {
		http.Error(w, "encode notification", http.StatusInternalServerError)
		return
	}
	sent := 0
	for range copies {
		if s.notes.Try(r.Context(), kind, id, url, s.attempt(body)) {
			sent++
		}
	}
	s.log.Info("notification resent", zap.String("kind", kind), zap.String("id", id), zap.Int("copies", copies), zap.Int("sent", sent))
	server.WriteJSON(w, http.StatusOK, map[string]int{"sent": sent})
}

// statusRequest forces a payment's status from /sandbox. StatusCode defaults
// to the status's usual code (empty for statuses dLocal gives no code, such
// as EXPIRED) and StatusDetail to the usual text.
type statusRequest struct {
	Status       string `json:"status"`
	StatusCode   string `json:"status_code"`
	StatusDetail string `json:"status_detail"`
}

// forceStatus sets a payment's status as dLocal would on a status change
// (e.g. PENDING → PAID), answers the payment and notifies it.
func (s *Server) forceStatus(w http.ResponseWriter, r *http.Request) {
	var req statusRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Status == "" {
		writeError(w, invalidParam("status"))
		return
	}
	if _, err := strconv.Atoi(req.StatusCode); req.StatusCode != "" && err != nil {
		writeError(w, invalidParam("status_code"))
		return
	}
	code, detail := knownStatus(req.Status)
	if req.StatusCode == "" {
		req.StatusCode = code
	}
	if req.StatusDetail == "" {
		req.StatusDetail = detail
	}
	p, ok := s.setStatus(r.PathValue("id"), req)
	if !ok {
		writeError(w, errPaymentNotFound)
		return
	}
	s.log.Info("payment status forced", zap.String("payment_id", p.ID), zap.String("status", p.Status))
	server.WriteJSON(w, http.StatusOK, p)
	s.notifyPayment(p)
}

// chargeback turns a PAID payment into CHARGEBACK, as a card holder's
// dispute the merchant lost would, answers the payment and notifies it.
// dLocal's chargeback status and notification are assumed
// (docs/wire-dlocal.md): a payment status change like any other.
func (s *Server) chargeback(w http.ResponseWriter, r *http.Request) {
	p, apiErr := s.chargeBack(r.PathValue("id"))
	if apiErr != nil {
		writeError(w, *apiErr)
		return
	}
	s.log.Info("payment charged back", zap.String("payment_id", p.ID))
	server.WriteJSON(w, http.StatusOK, p)
	s.notifyPayment(p)
}

// chargeBack moves payment id from PAID to CHARGEBACK and returns a
// snapshot.
func (s *Server) chargeBack(id string) (payment, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.payments[id]
	switch {
	case !ok:
		return payment{}, ptr(errPaymentNotFound)
	case p.Status != "PAID":
		return payment{}, ptr(errInvalidStatus)
	}
	p.Status = "CHARGEBACK"
	p.StatusCode, p.StatusDetail = knownStatus(p.Status)
	return *p, nil
}

// setStatus changes the status of the payment with id and returns a snapshot.
func (s *Server) setStatus(id string, req statusRequest) (payment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.payments[id]
	if !ok {
		return payment{}, false
	}
	p.Status, p.StatusCode, p.StatusDetail = req.Status, req.StatusCode, req.StatusDetail
	return *p, true
}

// PaymentIDs returns the ids of every payment held, in no order.
func (s *Server) PaymentIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.payments))
	for id := range s.payments {
		ids = append(ids, id)
	}
	return ids
}

// Stats counts what the simulator holds and how its notification attempts
// went: NotificationsSent attempts were answered 2xx, NotificationsFailed
// were not (non-2xx or transport error), retries included, and
// NotificationsWaiting wait now for a free sender (notifier.Config.Senders).
type Stats struct {
	Payments             int   `json:"payments"`
	Refunds              int   `json:"refunds"`
	NotificationsSent    int64 `json:"notifications_sent"`
	NotificationsFailed  int64 `json:"notifications_failed"`
	NotificationsWaiting int64 `json:"notifications_waiting"`
	// Injected faults: notifications dropped, extra copies, stale PENDINGs.
	NotificationsLost  int64 `json:"notifications_lost"`
	ExtraCopies        int64 `json:"extra_copies"`
	StaleNotifications int64 `json:"stale_notifications"`
}

// Stats returns the current counters, as served at GET /sandbox/stats.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	st := Stats{Payments: len(s.payments), Refunds: len(s.refunds)}
	s.mu.Unlock()
	c := s.notes.Counts()
	st.NotificationsSent, st.NotificationsFailed, st.NotificationsWaiting = c.Sent, c.Failed, c.Waiting
	st.NotificationsLost, st.ExtraCopies, st.StaleNotifications = c.Lost, c.Extra, c.Stale
	return st
}

func (s *Server) stats(w http.ResponseWriter, _ *http.Request) {
	server.WriteJSON(w, http.StatusOK, s.Stats())
}
