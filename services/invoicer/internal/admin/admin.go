// Package admin serves the operator endpoints under /admin, behind the
// admin token: list documents by status, show one with its provider calls
// and resolutions, and resolve a document parked in needs_attention by
// adopting a document the provider holds, retrying (look up again, then
// send if nothing is held) or voiding it. Every resolution records who
// decided and why.
package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/reveals"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/notify"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Lookup finds what the provider holds under a reference.
type Lookup func(ctx context.Context, reference string) ([]fiscal.Held, error)

// API is the operator API.
type API struct {
	store  *store.Store
	lookup Lookup
	log    *zap.Logger
	wake   func()
	valid  *notify.Valid
}

// New returns the operator API over the documents of st. lookup is nil for
// a provider without look-up: then adopt is refused. wake (when set) tells
// the relay a notification was committed.
func New(st *store.Store, lookup Lookup, log *zap.Logger, wake func()) *API {
	return &API{store: st, lookup: lookup, log: log, wake: wake}
}

// WithValid makes a measure the documents an operator's resolution makes
// valid, and returns a.
func (a *API) WithValid(v *notify.Valid) *API {
	a.valid = v
	return a
}

// Register mounts the endpoints on g, the guarded /admin group
// (httpserver.Server.Admin). Handlers answer errors of the errkind
// vocabulary, with a finer code where the API has always had one.
func (a *API) Register(g *echo.Group) {
	g.GET("/status", a.status)
	g.GET("/documents", a.list)
	g.GET("/documents/:id", a.show)
	g.POST("/documents/:id/resolve", a.resolve)
	g.GET("/cases", a.listCases)
	g.GET("/cases/:id", a.showCase)
	g.POST("/cases/:id/resolve", a.resolveCase)
	g.POST("/cases/:id/reveal", a.revealCase)
	reveals.Register(g, "invoicer", a.store)
	a.registerConsole(g)
}

// Status is the invoicer's part of the pipeline state.
type Status struct {
	Documents map[string]int64 `json:"documents"` // per status
	Due       int64            `json:"due"`       // due for an attempt now
	// OldestDue is since when the oldest due document waits; absent when
	// none is due.
	OldestDue *time.Time `json:"oldest_due,omitempty"`
}

func (a *API) status(c echo.Context) error {
	ctx := c.Request().Context()
	counts, err := a.store.CountByStatus(ctx)
	if err != nil {
		return err
	}
	st := Status{Documents: map[string]int64{}}
	for _, s := range fiscal.Statuses {
		st.Documents[string(s)] = 0
	}
	for s, n := range counts {
		st.Documents[string(s)] = n
	}
	due, err := a.store.DueStats(ctx)
	if err != nil {
		return err
	}
	st.Due = due.Due
	if due.Due > 0 {
		st.OldestDue = &due.OldestDueAt
	}
	return c.JSON(http.StatusOK, st)
}

// Document is a fiscal document as the API shows it. Buyer data is left
// out; the reference and source identify the document.
type Document struct {
	ID              int64      `json:"id"`
	SourceKind      string     `json:"source_kind"`
	SourceRef       string     `json:"source_ref"`
	Kind            string     `json:"kind"`
	Reference       string     `json:"reference"`
	CFEType         int32      `json:"cfe_type"`
	Status          string     `json:"status"`
	AmountMinor     int64      `json:"amount_minor"`
	Currency        string     `json:"currency"`
	OriginalSource  *string    `json:"original_source_ref,omitempty"`
	Series          *string    `json:"series,omitempty"`
	Number          *int64     `json:"number,omitempty"`
	ProviderStatus  *string    `json:"provider_status,omitempty"`
	CAE             *string    `json:"cae,omitempty"`
	CAEFrom         *int64     `json:"cae_from,omitempty"`    // first number the CAE authorizes
	CAETo           *int64     `json:"cae_to,omitempty"`      // last number the CAE authorizes
	CAEExpires      *time.Time `json:"cae_expires,omitempty"` // the CAE's expiry date
	SecurityCode    *string    `json:"security_code,omitempty"`
	VerifyURL       *string    `json:"verify_url,omitempty"`
	IssueDate       *time.Time `json:"issue_date,omitempty"`
	Attempts        int32      `json:"attempts"`
	DGIPolls        int32      `json:"dgi_polls"`
	DueAt           time.Time  `json:"due_at"`
	LastError       *string    `json:"last_error,omitempty"`
	AttentionReason *string    `json:"attention_reason,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	Revision        int32      `json:"revision"`              // 0, or the re-issue's number
	ReplacesID      *int64     `json:"replaces_id,omitempty"` // the document a re-issue replaces
	Refusals        int32      `json:"refusals"`              // consecutive refusals of its send
}

func view(d store.Document) Document {
	return Document{ID: d.ID, SourceKind: d.SourceKind, SourceRef: d.SourceRef, Kind: string(d.Kind), Reference: d.Reference,
		CFEType: int32(d.CFEType), Status: string(d.Status), AmountMinor: d.AmountMinor, Currency: d.Currency, OriginalSource: d.OriginalSourceRef,
		Series: d.ProviderSeries, Number: d.ProviderNumber, ProviderStatus: d.ProviderStatus, CAE: d.ProviderCAE,
		CAEFrom: d.ProviderCAEFrom, CAETo: d.ProviderCAETo, CAEExpires: d.ProviderCAEExpires,
		SecurityCode: d.ProviderSecurityCode, VerifyURL: d.ProviderURL, IssueDate: d.IssueDate, Attempts: d.Attempts,
		DGIPolls: d.DGIPolls, DueAt: d.DueAt, LastError: d.LastError, AttentionReason: d.AttentionReason,
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, Revision: d.Revision, ReplacesID: d.ReplacesID, Refusals: d.Refusals}
}

// list serves GET /admin/documents?status=&limit=&before=, newest first.
func (a *API) list(c echo.Context) error {
	status := fiscal.Status(c.QueryParam("status"))
	if status != "" && !knownStatus(status) {
		return errkind.Coded(errkind.Invalid, "invalid_status", "status: want one of pending, unknown, pending_dgi, authorized, issued, rejected, voided, needs_attention")
	}
	limit, err := intParam(c, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	before, err := intParam(c, "before", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	docs, err := a.store.Documents(c.Request().Context(), status, before, int32(limit))
	if err != nil {
		return err
	}
	out := make([]Document, len(docs))
	for i, d := range docs {
		out[i] = view(d)
	}
	return c.JSON(http.StatusOK, map[string]any{"documents": out})
}

// show serves GET /admin/documents/:id with the document's resolutions and
// one page of its provider calls (attempts.go: attempts_limit,
// attempts_before).
func (a *API) show(c echo.Context) error {
	d, err := a.document(c)
	if err != nil {
		return err
	}
	page, err := a.attemptPage(c, d.ID)
	if err != nil {
		return err
	}
	resolutions, err := a.store.Resolutions(c.Request().Context(), d.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"document": view(d), "attempts": page.Attempts,
		"attempts_next_before": page.NextBefore, "resolutions": resolutionViews(resolutions)})
}

// document loads the document named by the :id path parameter.
func (a *API) document(c echo.Context) (store.Document, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return store.Document{}, errkind.Coded(errkind.Invalid, "invalid_id", "id: want a positive integer")
	}
	d, err := a.store.Document(c.Request().Context(), id)
	if errkind.Is(err, errkind.NotFound) {
		return d, errkind.Coded(errkind.NotFound, "not_found", "no document %s", c.Param("id"))
	}
	return d, err
}

type resolutionView struct {
	Action     string    `json:"action"`
	Actor      string    `json:"actor"`
	Reason     string    `json:"reason"`
	FromStatus string    `json:"from_status"`
	ToStatus   string    `json:"to_status"`
	At         time.Time `json:"at"`
}

func resolutionViews(in []store.Resolution) []resolutionView {
	out := make([]resolutionView, len(in))
	for i, x := range in {
		out[i] = resolutionView{Action: x.Action, Actor: x.Actor, Reason: x.Reason, FromStatus: string(x.FromStatus), ToStatus: string(x.ToStatus), At: x.At}
	}
	return out
}

func knownStatus(s fiscal.Status) bool {
	switch s {
	case fiscal.StatusPending, fiscal.StatusUnknown, fiscal.StatusPendingDGI, fiscal.StatusNeedsAttention:
		return true
	}
	return s.Final()
}

// intParam reads an optional integer query parameter within [lo, hi].
func intParam(c echo.Context, name string, def, lo, hi int64) (int64, error) {
	s := c.QueryParam(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, errkind.Coded(errkind.Invalid, "invalid_"+name, "%s: want an integer from %d to %d", name, lo, hi)
	}
	return n, nil
}

// decode reads a JSON body strictly into v.
func decode(c echo.Context, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, 16<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errkind.Coded(errkind.Invalid, "invalid_body", "want a JSON object: %v", err)
	}
	return nil
}
