package pspsim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// refund is dLocal's refund object. Unlike payments, its status_code is a
// JSON integer, as in dLocal's refund example.
type refund struct {
	ID              string `json:"id"`
	PaymentID       string `json:"payment_id"`
	Amount          amount `json:"amount"`
	Currency        string `json:"currency"`
	Status          string `json:"status"`
	StatusCode      int    `json:"status_code"`
	StatusDetail    string `json:"status_detail"`
	CreatedDate     string `json:"created_date"`
	NotificationURL string `json:"notification_url"`
	Description     string `json:"description"`
	OrderID         string `json:"order_id"`

	created time.Time // CreatedDate, for listing by period
	seq     int       // creation order, for a stable listing
}

type refundRequest struct {
	PaymentID       string      `json:"payment_id"`
	Amount          json.Number `json:"amount"`
	Currency        string      `json:"currency"`
	NotificationURL string      `json:"notification_url"`
	Description     string      `json:"description"`
}

// requested returns the amount asked for in minor units, or -1 for "the
// full remaining amount" when amount and currency are both omitted.
func (req refundRequest) requested() (int64, *apiError) {
	switch {
	case req.PaymentID == "":
		return 0, ptr(invalidParam("payment_id"))
	case req.Amount == "" && req.Currency == "":
		return -1, nil
	case req.Amount == "":
		return 0, ptr(invalidParam("amount"))
	case req.Currency == "":
		return 0, ptr(invalidParam("currency"))
	}
	minor, err := money.ParseMinor(req.Amount.String())
	if err != nil || minor <= 0 {
		return 0, ptr(invalidParam("amount"))
	}
	return minor, nil
}

func (s *Server) createRefund(w http.ResponseWriter, _ *http.Request, body []byte) {
	var req refundRequest
	if !decodeJSON(w, body, &req) {
		return
	}
	want, apiErr := req.requested()
	if apiErr != nil {
		writeError(w, *apiErr)
		return
	}
	ref, apiErr := s.addRefund(req, want)
	if apiErr != nil {
		s.log.Info("refund refused", zap.String("payment_id", req.PaymentID), zap.Int("code", apiErr.Code))
		writeError(w, *apiErr)
		return
	}
	s.log.Info("refund created", zap.String("refund_id", ref.ID), zap.String("payment_id", ref.PaymentID))
	server.WriteJSON(w, http.StatusOK, ref)
	s.notifyRefund(ref)
}

// addRefund records a successful refund of want minor units (-1: all that
// remains) against a PAID payment, keeping the refunded total within the
// payment amount.
func (s *Server) addRefund(req refundRequest, want int64) (refund, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.payments[req.PaymentID]
	switch {
	case !ok:
		return refund{}, ptr(errPaymentNotFound)
	case p.Status != "PAID":
		return refund{}, ptr(errInvalidStatus)
	case req.Currency != "" && req.Currency != p.Currency:
		return refund{}, ptr(invalidParam("currency"))
	}
	remaining := int64(p.Amount) - p.refunded
	if want == -1 {
		want = remaining
	}
	if want <= 0 || want > remaining {
		return refund{}, ptr(errAmountExceeded)
	}
	p.refunded += want
	now := s.cfg.Now().UTC()
	r := refund{
		ID:              s.newRefundID(),
		PaymentID:       p.ID,
		Amount:          amount(want),
		Currency:        p.Currency,
		Status:          "SUCCESS",
		StatusCode:      200,
		StatusDetail:    "The refund was paid.",
		CreatedDate:     now.Format(dateLayout),
		NotificationURL: req.NotificationURL,
		Description:     req.Description,
		OrderID:         p.OrderID,
		created:         now,
		seq:             len(s.refunds),
	}
	stored := r
	s.refunds[r.ID] = &stored
	s.refundList.add(&stored)
	return r, nil
}

// newRefundID returns an unused id shaped like dLocal's ("REF42342"); random
// digits keep ids distinct across simulator restarts. Callers hold s.mu.
func (s *Server) newRefundID() string {
	for {
		id := fmt.Sprintf("REF%010d", rand.Int64N(1e10))
		if _, taken := s.refunds[id]; !taken {
			return id
		}
	}
}

func (s *Server) getRefund(w http.ResponseWriter, r *http.Request, _ []byte) {
	ref, ok := s.refund(r.PathValue("id"))
	if !ok {
		writeError(w, errRefundNotFound)
		return
	}
	server.WriteJSON(w, http.StatusOK, ref)
}

// refund returns a snapshot of the refund with id.
func (s *Server) refund(id string) (refund, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.refunds[id]
	if !ok {
		return refund{}, false
	}
	return *r, true
}

// notifyRefund sends r in the background.
func (s *Server) notifyRefund(r refund) {
	body, err := json.Marshal(r)
	if err != nil {
		s.log.Error("encode refund notification", zap.String("refund_id", r.ID), zap.Error(err))
		return
	}
	s.notifyAsync("refund", r.ID, s.target(r.NotificationURL), body)
}
