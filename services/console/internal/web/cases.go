package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/pkg/reveals"
	"github.com/onceflow/onceflow/services/console/internal/adminapi"
	"github.com/onceflow/onceflow/services/console/internal/auth"
)

// kinds are the case kinds the inbox filters by.
var kinds = []string{cases.UnmatchedPayment, cases.RefusedRefund, cases.ParkedReceipt, cases.Chargeback, cases.DocumentRejected,
	cases.DocumentRefused, cases.NeedsAttention, cases.ParkedOutboxRow, cases.AuditDisagreement, cases.MissingDocument}

// filterForm is the inbox's filter as the form sent it, kept to refill it.
type filterForm struct {
	Kind, PSP, MinAge, MinAmount, MaxAmount string
}

// Query is the filter as a query string, for links that keep it.
func (f filterForm) Query() string {
	return url.Values{"kind": {f.Kind}, "psp": {f.PSP}, "min_age": {f.MinAge}, "min_amount": {f.MinAmount}, "max_amount": {f.MaxAmount}}.Encode()
}

// parseFilter reads the inbox's filter; the error names the field at fault.
func parseFilter(get func(string) string) (filterForm, adminapi.CaseFilter, error) {
	f := filterForm{Kind: get("kind"), PSP: strings.TrimSpace(get("psp")), MinAge: get("min_age"), MinAmount: get("min_amount"), MaxAmount: get("max_amount")}
	cf := adminapi.CaseFilter{Kind: f.Kind, PSP: f.PSP}
	if f.Kind != "" && !slices.Contains(kinds, f.Kind) {
		return f, cf, &inputError{"kind", "want one of " + strings.Join(kinds, ", ")}
	}
	if len(f.PSP) > 40 {
		return f, cf, &inputError{"psp", "want a PSP name of at most 40 characters"}
	}
	if f.MinAge != "" {
		d, err := time.ParseDuration(f.MinAge)
		if err != nil || d < 0 {
			return f, cf, &inputError{"min_age", "want a duration such as 30m, 4h or 72h"}
		}
		cf.MinAge = d
	}
	for _, a := range []struct {
		name, v string
		into    *int64
	}{{"min_amount", f.MinAmount, &cf.MinAmount}, {"max_amount", f.MaxAmount, &cf.MaxAmount}} {
		if a.v == "" {
			continue
		}
		n, err := money.ParseMinor(a.v)
		if err != nil {
			return f, cf, &inputError{a.name, "want an amount such as 1200 or 1200.50"}
		}
		*a.into = n
	}
	return f, cf, nil
}

// casesData is the inbox page.
type casesData struct {
	Filter  filterForm
	Kinds   []string
	Cases   []cases.View
	Actions []string // the actions a bulk action can take on these cases
}

func (h *Handler) listCases(c echo.Context) error {
	f, cf, err := parseFilter(c.QueryParam)
	if err != nil {
		return err
	}
	found, err := h.api.Cases(c.Request().Context(), cf)
	if err != nil {
		return err
	}
	var acts []string
	for _, k := range found {
		for _, a := range adminapi.Actions(k) {
			if !slices.Contains(acts, a) {
				acts = append(acts, a)
			}
		}
	}
	return h.render(c, http.StatusOK, "cases", "Cases", casesData{Filter: f, Kinds: kinds, Cases: found, Actions: acts})
}

// evidenceRow is one evidence field; Hidden when it is personal data not
// revealed.
type evidenceRow struct {
	Key, Value string
	Hidden     bool
}

// personalKeys are the evidence fields that can hold personal data.
var personalKeys = []string{"name", "legal_name", "payer_name", "payer", "email", "payer_email", "doc_number", "payer_document",
	"tax_id", "rut", "address", "buyer", "phone"}

func evidence(raw json.RawMessage, reveal bool) []evidenceRow {
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	rows := make([]evidenceRow, 0, len(m))
	for k, v := range m {
		personal := slices.Contains(personalKeys, strings.ToLower(k))
		row := evidenceRow{Key: k, Value: fmt.Sprint(v), Hidden: personal && !reveal}
		if row.Hidden {
			row.Value = ""
		}
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Key < rows[j].Key })
	return rows
}

// caseData is the case page.
type caseData struct {
	Case     cases.View
	Actions  []string
	Evidence []evidenceRow
	Personal bool // some evidence is hidden
}

func (h *Handler) showCase(c echo.Context) error {
	k, err := h.api.Case(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return h.caseView(c, k, false)
}

func (h *Handler) caseView(c echo.Context, k cases.View, reveal bool) error {
	ev := evidence(k.Evidence, reveal)
	d := caseData{Case: k, Actions: adminapi.Actions(k), Evidence: ev,
		Personal: slices.ContainsFunc(ev, func(r evidenceRow) bool { return r.Hidden })}
	return h.render(c, http.StatusOK, "case", "Case "+k.ID, d)
}

// revealCase shows a case's evidence with its personal data: the service
// that owns the case records who revealed it and why before it answers
// (its GET /admin/reveals, the Reveals page). The console's audit line
// names the user and the case, never the data or the reason.
func (h *Handler) revealCase(c echo.Context) error {
	reason := strings.TrimSpace(c.FormValue("reason"))
	if reason == "" {
		return &inputError{"reason", "required: say why you reveal this personal data"}
	}
	if len(reason) > reveals.MaxReason {
		return &inputError{"reason", fmt.Sprintf("want at most %d characters", reveals.MaxReason)}
	}
	ctx := c.Request().Context()
	k, err := h.api.Case(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	user := auth.Current(c).Name
	if k, err = h.api.RevealCase(ctx, k, user, reason); err != nil {
		return err
	}
	h.audit.Info("personal data revealed", zap.String("user", user), zap.String("case", k.ID))
	return h.caseView(c, k, true)
}

// resolveCase takes one action on one case, as the signed-in operator,
// with the reason the form requires.
func (h *Handler) resolveCase(c echo.Context) error {
	r, err := resolution(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	k, err := h.api.Case(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	if !slices.Contains(adminapi.Actions(k), r.Action) {
		return &inputError{"action", fmt.Sprintf("case %s does not close with %q; want one of %s", k.ID, r.Action, strings.Join(adminapi.Actions(k), ", "))}
	}
	if err := h.api.Resolve(ctx, k, r); err != nil {
		return err
	}
	h.audit.Info("case resolved", zap.String("user", r.Actor), zap.String("case", k.ID), zap.String("action", r.Action))
	return c.Redirect(http.StatusSeeOther, "/cases/"+k.ID)
}

// resolution reads an action form: action and reason are required; the
// actor is the signed-in user.
func resolution(c echo.Context) (adminapi.Resolution, error) {
	r := adminapi.Resolution{Action: c.FormValue("action"), Actor: auth.Current(c).Name,
		Reason: strings.TrimSpace(c.FormValue("reason")), PSPRefundID: strings.TrimSpace(c.FormValue("psp_refund_id"))}
	if r.Action == "" {
		return r, &inputError{"action", "required"}
	}
	if r.Reason == "" {
		return r, &inputError{"reason", "required: say why, it is recorded with your name"}
	}
	if len(r.Reason) > 500 {
		return r, &inputError{"reason", "want at most 500 characters"}
	}
	if r.Action == cases.ActionRefundedAtPSP && r.PSPRefundID == "" {
		return r, &inputError{"psp_refund_id", "required for refunded_at_psp"}
	}
	if r.Action == cases.ActionAdopt {
		r.Series = strings.TrimSpace(c.FormValue("series"))
		n, err := strconv.ParseInt(c.FormValue("number"), 10, 64)
		if r.Series == "" || err != nil || n < 1 {
			return r, &inputError{"number", "adopt needs the provider's series and a positive number"}
		}
		r.Number = n
	}
	return r, nil
}
