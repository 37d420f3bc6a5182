package web

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/services/console/internal/adminapi"
)

// bulkData is the confirmation page of a bulk action: what it will do to
// which cases, before it does anything.
type bulkData struct {
	Filter filterForm
	Action string
	Cases  []cases.View
	Result *bulkResult
}

type bulkResult struct {
	Done   int
	Failed map[string]string // case id → why
}

// bulkTargets are the cases the filter selects that action closes.
func (h *Handler) bulkTargets(c echo.Context, get func(string) string) (bulkData, error) {
	f, cf, err := parseFilter(get)
	if err != nil {
		return bulkData{}, err
	}
	action := get("action")
	if action == "" {
		return bulkData{}, &inputError{"action", "required"}
	}
	found, err := h.api.Cases(c.Request().Context(), cf)
	if err != nil {
		return bulkData{}, err
	}
	d := bulkData{Filter: f, Action: action}
	for _, k := range found {
		if slices.Contains(adminapi.Actions(k), action) {
			d.Cases = append(d.Cases, k)
		}
	}
	return d, nil
}

// bulkConfirm shows how many cases the action would touch and asks for
// the reason; nothing changes yet.
func (h *Handler) bulkConfirm(c echo.Context) error {
	d, err := h.bulkTargets(c, c.QueryParam)
	if err != nil {
		return err
	}
	return h.render(c, http.StatusOK, "bulk", "Bulk action", d)
}

// bulkApply takes the action on exactly the cases the confirmation page
// listed (their ids come back with the form), each recorded with the
// operator and the reason; a case that changed meanwhile is reported, not
// forced.
func (h *Handler) bulkApply(c echo.Context) error {
	r, err := resolution(c)
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return &inputError{"form", "unreadable"}
	}
	ids := form["case"]
	if len(ids) == 0 {
		return &inputError{"case", "no case selected"}
	}
	ctx := c.Request().Context()
	res := &bulkResult{Failed: map[string]string{}}
	for _, id := range ids {
		k, err := h.api.Case(ctx, id)
		if err == nil && !slices.Contains(adminapi.Actions(k), r.Action) {
			err = &inputError{"action", "the case no longer closes with " + r.Action}
		}
		if err == nil {
			err = h.api.Resolve(ctx, k, r)
		}
		if err != nil {
			_, _, msg := describe(err)
			res.Failed[id] = strings.TrimSpace(msg)
			continue
		}
		res.Done++
		h.audit.Info("case resolved", zap.String("user", r.Actor), zap.String("case", k.ID), zap.String("action", r.Action), zap.Bool("bulk", true))
	}
	return h.render(c, http.StatusOK, "bulk", "Bulk action", bulkData{Action: r.Action, Result: res})
}
