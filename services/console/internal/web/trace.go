package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/reveals"
	"github.com/onceflow/onceflow/services/console/internal/adminapi"
	"github.com/onceflow/onceflow/services/console/internal/auth"
)

// traceData is the trace page: the search and, once searched, the
// timeline.
type traceData struct {
	Query    string
	Trace    *adminapi.Trace
	TraceURL string
}

// trace searches any identifier — PSP payment or refund id, order id,
// merchant order id, document reference, CFE series and number, webhook
// event id, trace id — and shows the timeline of the money it names.
func (h *Handler) trace(c echo.Context) error {
	q := strings.TrimSpace(c.QueryParam("q"))
	d := traceData{Query: q, TraceURL: h.opts.TraceURL}
	if len(q) > 200 {
		return &inputError{"q", "want an identifier of at most 200 characters"}
	}
	if q != "" {
		d.Trace = h.api.Trace(c.Request().Context(), q)
	}
	return h.render(c, http.StatusOK, "trace", "Trace", d)
}

// revealData is a revealed customer's personal data.
type revealData struct {
	Fields [][2]string
	Record string // the id of ingest's record of this reveal
	Back   string
}

// revealCustomer asks ingest for a customer's personal data on behalf of
// the signed-in operator, with a required reason. Ingest records who
// revealed which customer and why before it answers (ingest.reveals, the
// Reveals page); the console's audit line names the user and the customer,
// never the data or the reason.
func (h *Handler) revealCustomer(c echo.Context) error {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return &inputError{"id", "want a customer id"}
	}
	reason := strings.TrimSpace(c.FormValue("reason"))
	if reason == "" {
		return &inputError{"reason", "required: say why you reveal this personal data"}
	}
	if len(reason) > reveals.MaxReason {
		return &inputError{"reason", fmt.Sprintf("want at most %d characters", reveals.MaxReason)}
	}
	u := auth.Current(c)
	var pd map[string]any
	if err := h.api.Post(c.Request().Context(), "ingest", "/admin/customers/"+id.String()+"/reveal",
		map[string]string{"actor": u.Name, "reason": reason}, &pd); err != nil {
		return err
	}
	h.audit.Info("personal data revealed", zap.String("user", u.Name), zap.String("customer", id.String()))
	d := revealData{Record: fmt.Sprint(pd["reveal_id"]), Back: "/trace?q=" + url.QueryEscape(c.FormValue("q"))}
	for _, k := range []string{"legal_name", "doc_type", "doc_country", "doc_number", "email", "address", "city", "department", "country"} {
		d.Fields = append(d.Fields, [2]string{k, fmt.Sprint(pd[k])})
	}
	return h.render(c, http.StatusOK, "reveal", "Personal data", d)
}

// revealsData is the Reveals page: every recorded reveal, newest first.
type revealsData struct {
	Reveals []reveals.Reveal
	Errors  map[string]string
}

// revealsPage lists the reveals the services recorded (who was shown which
// customer's or case's personal data, why and when; never the data).
func (h *Handler) revealsPage(c echo.Context) error {
	all, errs := h.api.Reveals(c.Request().Context(), 200)
	return h.render(c, http.StatusOK, "reveals", "Reveals of personal data", revealsData{Reveals: all, Errors: errs})
}
