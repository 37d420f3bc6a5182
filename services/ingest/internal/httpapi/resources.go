package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// Customer is a buyer's fiscal profile.
type Customer struct {
	ID         uuid.UUID `json:"id"`
	DocType    string    `json:"doc_type"`
	DocCountry string    `json:"doc_country"`
	DocNumber  string    `json:"doc_number"`
	LegalName  string    `json:"legal_name"`
	Address    string    `json:"address"`
	City       string    `json:"city"`
	Department string    `json:"department"`
	Country    string    `json:"country"`
	Email      string    `json:"email"`
}

var docTypes = map[string]bool{"RUT": true, "CI": true, "PASSPORT": true, "OTHER": true}

func (a *API) createCustomer(c echo.Context) error {
	var in Customer
	if err := bind(c, &in); err != nil {
		return err
	}
	in.normalize()
	if errs := in.validate(); len(errs) > 0 {
		return errs.answer(c)
	}
	row, err := a.store.InsertCustomer(c.Request().Context(), store.Customer{
		DocType: in.DocType, DocCountry: in.DocCountry, DocNumber: in.DocNumber, LegalName: in.LegalName,
		Address: in.Address, City: in.City, Department: in.Department, Country: in.Country, Email: in.Email,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, customerOut(row))
}

func (a *API) getCustomer(c echo.Context) error {
	id, err := parseID(c)
	if err != nil {
		return err
	}
	row, err := a.store.Customer(c.Request().Context(), id)
	if err != nil {
		return notFound(err)
	}
	return c.JSON(http.StatusOK, customerOut(row))
}

func customerOut(r store.Customer) Customer {
	return Customer{ID: r.ID, DocType: r.DocType, DocCountry: r.DocCountry, DocNumber: r.DocNumber, LegalName: r.LegalName,
		Address: r.Address, City: r.City, Department: r.Department, Country: r.Country, Email: r.Email}
}

// Order is what a payment is validated against.
type Order struct {
	ID              uuid.UUID  `json:"id"`
	MerchantOrderID string     `json:"merchant_order_id"`
	CustomerID      uuid.UUID  `json:"customer_id"`
	AmountMinor     int64      `json:"amount_minor"`
	Currency        string     `json:"currency"`
	Lines           orderLines `json:"lines"`
	PSPPaymentID    *string    `json:"psp_payment_id,omitempty"`
	// Recurring marks a subscription: each PAID payment of the order's
	// amount is invoiced as its own sale, not a second payment.
	Recurring bool `json:"recurring,omitempty"`
	// PSPPlanID names, on a recurring order, the PSP plan its buyer
	// subscribes to (a dLocal plan id), so the poller finds the order's
	// subscription before any of its payments is recorded.
	PSPPlanID *string `json:"psp_plan_id,omitempty"`
}

func (a *API) createOrder(c echo.Context) error {
	var in Order
	if err := bind(c, &in); err != nil {
		return err
	}
	in.Currency = strings.ToUpper(in.Currency)
	errs := validateOrder(in)
	if len(errs) > 0 {
		return errs.answer(c)
	}
	lines, err := json.Marshal(in.Lines)
	if err != nil {
		return err
	}
	row, err := a.store.InsertOrder(c.Request().Context(), store.Order{
		MerchantOrderID: in.MerchantOrderID, CustomerID: in.CustomerID, AmountMinor: in.AmountMinor,
		Currency: in.Currency, Lines: lines, PSPPaymentID: in.PSPPaymentID, Recurring: in.Recurring,
		PSPPlanID: in.PSPPlanID,
	})
	if errkind.Is(err, errkind.Invalid) {
		return fieldErrors{"customer_id": "no such customer"}.answer(c)
	}
	if err != nil && c.Request().Header.Get("Idempotency-Key") != "" {
		if same, ok := a.sameOrder(c, in); ok { // an earlier attempt committed before its key was finished
			return c.JSON(http.StatusCreated, same)
		}
	}
	if err != nil {
		return conflict(err, "an order with this merchant_order_id or psp_payment_id exists")
	}
	return c.JSON(http.StatusCreated, orderOut(row))
}

// sameOrder returns the order recorded under in's merchant order id when it
// is exactly in: the retry of a create whose first attempt committed the
// order but died (a crash, a lost database) before finishing its
// Idempotency-Key, so the key was claimed again.
func (a *API) sameOrder(c echo.Context, in Order) (Order, bool) {
	o, _, err := a.store.OrderWithCustomerByMerchantID(c.Request().Context(), in.MerchantOrderID)
	if err != nil {
		return Order{}, false
	}
	got := orderOut(o)
	same, want := got, in
	same.Lines, want.Lines, want.ID = nil, nil, got.ID // no lines are stored as null or []
	return got, reflect.DeepEqual(same, want) && len(got.Lines) == len(in.Lines) && (len(in.Lines) == 0 || reflect.DeepEqual(got.Lines, in.Lines))
}

func (a *API) getOrder(c echo.Context) error {
	id, err := parseID(c)
	if err != nil {
		return err
	}
	row, err := a.store.Order(c.Request().Context(), id)
	if err != nil {
		return notFound(err)
	}
	docs, err := a.store.OrderDocuments(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, orderWithDocuments(orderOut(row), docs))
}

func orderOut(r store.Order) Order {
	o := Order{ID: r.ID, MerchantOrderID: r.MerchantOrderID, CustomerID: r.CustomerID, AmountMinor: r.AmountMinor,
		Currency: r.Currency, PSPPaymentID: r.PSPPaymentID, Recurring: r.Recurring, PSPPlanID: r.PSPPlanID, Lines: orderLines{}}
	_ = json.Unmarshal(r.Lines, &o.Lines)
	if o.Lines == nil { // an order recorded without lines stores null
		o.Lines = orderLines{}
	}
	return o
}
