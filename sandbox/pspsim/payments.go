package pspsim

import (
	"encoding/json"
	"net/http"
	"regexp"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// dateLayout is dLocal's created_date form.
const dateLayout = "2006-01-02T15:04:05.000-0700"

var (
	currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)
	countryRE  = regexp.MustCompile(`^[A-Z]{2}$`)
	forcedRE   = regexp.MustCompile(`^[1-7][0-9]{2}$`)
)

// amount is an amount in minor units that marshals as a JSON number with two
// decimals, e.g. 72.00.
type amount int64

// MarshalJSON renders the amount as a two-decimal JSON number.
func (a amount) MarshalJSON() ([]byte, error) { return []byte(money.FormatMinor(int64(a))), nil }

// payer is the buyer as sent by the merchant.
type payer struct {
	Name     string `json:"name,omitempty"`
	Email    string `json:"email,omitempty"`
	Document string `json:"document,omitempty"`
}

// payment is dLocal's payment object; refunded (unexported, not marshalled)
// is the sum of its successful refunds.
type payment struct {
	ID                string `json:"id"`
	Amount            amount `json:"amount"`
	Currency          string `json:"currency"`
	Country           string `json:"country"`
	PaymentMethodID   string `json:"payment_method_id"`
	PaymentMethodType string `json:"payment_method_type"`
	PaymentMethodFlow string `json:"payment_method_flow"`
	Payer             payer  `json:"payer"`
	OrderID           string `json:"order_id"`
	NotificationURL   string `json:"notification_url"`
	Description       string `json:"description"`
	Status            string `json:"status"`
	StatusCode        string `json:"status_code"`
	StatusDetail      string `json:"status_detail"`
	CreatedDate       string `json:"created_date"`

	refunded int64
	created  time.Time // CreatedDate, for listing by period
	seq      int       // creation order, for a stable listing
}

type paymentRequest struct {
	Amount          json.Number `json:"amount"`
	Currency        string      `json:"currency"`
	Country         string      `json:"country"`
	PaymentMethodID string      `json:"payment_method_id"`
	OrderID         string      `json:"order_id"`
	Description     string      `json:"description"`
	NotificationURL string      `json:"notification_url"`
	Payer           payer       `json:"payer"`
}

// validate checks the fields a payment needs and returns its amount.
func (req paymentRequest) validate() (int64, *apiError) {
	minor, err := money.ParseMinor(req.Amount.String())
	switch {
	case err != nil || minor <= 0:
		return 0, ptr(invalidParam("amount"))
	case !currencyRE.MatchString(req.Currency):
		return 0, ptr(invalidParam("currency"))
	case !countryRE.MatchString(req.Country):
		return 0, ptr(invalidParam("country"))
	case req.PaymentMethodID == "":
		return 0, ptr(invalidParam("payment_method_id"))
	case req.OrderID == "":
		return 0, ptr(invalidParam("order_id"))
	}
	return minor, nil
}

func (s *Server) createPayment(w http.ResponseWriter, _ *http.Request, body []byte) {
	var req paymentRequest
	if !decodeJSON(w, body, &req) {
		return
	}
	minor, apiErr := req.validate()
	if apiErr != nil {
		writeError(w, *apiErr)
		return
	}
	status, code := outcome(req.Description)
	_, detail := knownStatus(status)
	now := s.cfg.Now().UTC()
	p := payment{
		ID:                "D-4-" + uuid.NewString(),
		Amount:            amount(minor),
		Currency:          req.Currency,
		Country:           req.Country,
		PaymentMethodID:   req.PaymentMethodID,
		PaymentMethodType: "CARD",
		PaymentMethodFlow: "DIRECT",
		Payer:             req.Payer,
		OrderID:           req.OrderID,
		NotificationURL:   req.NotificationURL,
		Description:       req.Description,
		Status:            status,
		StatusCode:        code,
		StatusDetail:      detail,
		CreatedDate:       now.Format(dateLayout),
		created:           now,
	}
	pendingFirst := p.Status == "PAID" && s.notes.PendingFirst()
	if pendingFirst {
		p.Status = "PENDING"
		p.StatusCode, p.StatusDetail = knownStatus("PENDING")
	}
	s.mu.Lock()
	p.seq = len(s.payments)
	stored := p
	s.payments[p.ID] = &stored
	s.paymentList.add(&stored)
	s.mu.Unlock()
	s.log.Info("payment created", zap.String("payment_id", p.ID), zap.String("status", p.Status))
	server.WriteJSON(w, http.StatusOK, p)
	s.notifyPayment(p)
	if pendingFirst {
		s.notes.Later(s.cfg.Faults.PendingFor, func() { s.approve(p.ID) })
	}
}

// approve turns a payment that started PENDING into PAID, as a card
// approved after review would, and notifies it.
func (s *Server) approve(id string) {
	code, detail := knownStatus("PAID")
	if p, ok := s.setStatus(id, statusRequest{Status: "PAID", StatusCode: code, StatusDetail: detail}); ok {
		s.notifyPayment(p)
	}
}

func (s *Server) getPayment(w http.ResponseWriter, r *http.Request, _ []byte) {
	p, ok := s.payment(r.PathValue("id"))
	if !ok {
		writeError(w, errPaymentNotFound)
		return
	}
	server.WriteJSON(w, http.StatusOK, p)
}

// payment returns a snapshot of the payment with id.
func (s *Server) payment(id string) (payment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.payments[id]
	if !ok {
		return payment{}, false
	}
	return *p, true
}

// notifyPayment sends p's current state in the background. A PAID payment
// may be followed, after every copy of it, by a stale PENDING notification.
func (s *Server) notifyPayment(p payment) {
	body, err := json.Marshal(p)
	if err != nil {
		s.log.Error("encode payment notification", zap.String("payment_id", p.ID), zap.Error(err))
		return
	}
	url := s.target(p.NotificationURL)
	s.notifyAsync("payment", p.ID, url, body)
	if p.Status != "PAID" || !s.notes.StaleAfterPaid() {
		return
	}
	stale := p
	stale.Status = "PENDING"
	stale.StatusCode, stale.StatusDetail = knownStatus("PENDING")
	if body, err = json.Marshal(stale); err == nil {
		s.notifyAfter(s.cfg.Faults.DelayMax, "payment", p.ID, url, body)
	}
}

// outcome applies dLocal's sandbox convention: a three-digit status code in
// the description forces that outcome ("300" rejected, "100" pending, ...);
// anything else is a card auto-approval.
func outcome(description string) (status, code string) {
	if forcedRE.MatchString(description) {
		if st, ok := statusOfCode(description); ok {
			return st, description
		}
	}
	return "PAID", "200"
}

// statusOfCode maps a dLocal payment status code to its status by its class
// (first digit): 1xx PENDING, 2xx PAID, 3xx REJECTED, ...
func statusOfCode(code string) (string, bool) {
	for _, st := range []string{"PENDING", "PAID", "REJECTED", "CANCELLED", "AUTHORIZED", "VERIFIED"} {
		if c, _ := knownStatus(st); c[0] == code[0] {
			return st, true
		}
	}
	return "", false
}

// knownStatus returns the default status_code and status_detail of a payment
// status; statuses dLocal lists without a code (EXPIRED, REFUNDED, ...) get
// an empty code.
func knownStatus(status string) (code, detail string) {
	switch status {
	case "PENDING":
		return "100", "The payment is pending."
	case "PAID":
		return "200", "The payment was paid."
	case "REJECTED":
		return "300", "The payment was rejected."
	case "CANCELLED":
		return "400", "The payment was cancelled."
	case "AUTHORIZED":
		return "600", "The payment was authorized."
	case "VERIFIED":
		return "700", "The payment was verified."
	case "CHARGEBACK":
		return "", "The payment was charged back."
	}
	return "", "The payment status is " + status + "."
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }
