package admin

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/pkg/board"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// EstimateFrom is the documents table's size (by the planner's estimate)
// from which the board estimates the final statuses instead of counting
// them.
const EstimateFrom = 100_000

// registerConsole adds the endpoints the console uses: the board and the
// trace of one identifier.
func (a *API) registerConsole(g *echo.Group) {
	g.GET("/board", a.board)
	g.GET("/trace", a.trace)
}

// Board is the invoicer's part of the pipeline board.
type Board struct {
	Documents map[string]int64 `json:"documents"`
	// Estimated names the statuses whose figure is an estimate.
	Estimated []string          `json:"estimated"`
	Due       board.Stage       `json:"due"`
	Outbox    board.Stage       `json:"outbox"`
	Cases     []board.CaseCount `json:"cases"`
}

func (a *API) board(c echo.Context) error {
	ctx := c.Request().Context()
	counts, err := a.store.BoardCounts(ctx, EstimateFrom)
	if err != nil {
		return err
	}
	b := Board{Documents: map[string]int64{}, Estimated: []string{}}
	for _, s := range fiscal.Statuses {
		b.Documents[string(s)] = 0
	}
	for s, n := range counts.Documents {
		b.Documents[string(s)] = n
	}
	for _, s := range counts.Estimated {
		b.Estimated = append(b.Estimated, string(s))
	}
	due, err := a.store.DueStats(ctx)
	if err != nil {
		return err
	}
	b.Due = board.Stage{Pending: due.Due, Parked: b.Documents["needs_attention"]}
	if due.Due > 0 {
		t := due.OldestDueAt.UTC()
		b.Due.Oldest = &t
	}
	ob, err := a.store.OutboxStats(ctx)
	if err != nil {
		return err
	}
	b.Outbox = board.OutboxStage(ob)
	stats, err := a.store.OpenCaseStats(ctx)
	if err != nil {
		return err
	}
	b.Cases = board.Cases(stats)
	return c.JSON(http.StatusOK, b)
}

// seriesNumber reads a CFE series and number: "A-123", "A 123" or "A123".
var seriesNumber = regexp.MustCompile(`^([A-Za-z]{1,2})[ -]?([0-9]{1,18})$`)

// TraceDocument is a document with its provider calls, resolutions and
// notifications, as a trace shows it.
type TraceDocument struct {
	Document      Document           `json:"document"`
	Attempts      []attemptView      `json:"attempts"`
	Resolutions   []resolutionView   `json:"resolutions"`
	Notifications []notificationView `json:"notifications"`
}

type notificationView struct {
	ID           int64      `json:"id"`
	EventKey     string     `json:"event_key"`
	EventType    string     `json:"event_type"`
	CreatedAt    time.Time  `json:"created_at"`
	Attempts     int32      `json:"attempts"`
	PublishedAt  *time.Time `json:"published_at,omitempty"`
	ParkedAt     *time.Time `json:"parked_at,omitempty"`
	ParkedReason *string    `json:"parked_reason,omitempty"`
}

// trace answers GET /admin/trace?q=: the documents q names (reference,
// payment or refund id, series and number) with every provider call
// (latency and outcome; DGI polls are the status calls), every resolution
// and every notification. Buyer data is never part of it.
func (a *API) trace(c echo.Context) error {
	q := strings.TrimSpace(c.QueryParam("q"))
	if q == "" || len(q) > 200 {
		return errkind.Coded(errkind.Invalid, "invalid_q", "q: want an identifier of 1 to 200 characters")
	}
	var series string
	var number int64
	if m := seriesNumber.FindStringSubmatch(q); m != nil {
		series = strings.ToUpper(m[1])
		number, _ = strconv.ParseInt(m[2], 10, 64)
	}
	ctx := c.Request().Context()
	docs, err := a.store.TraceDocuments(ctx, q, series, number)
	if err != nil {
		return err
	}
	out := make([]TraceDocument, 0, len(docs))
	for _, d := range docs {
		td, err := a.traceDocument(c, d)
		if err != nil {
			return err
		}
		out = append(out, td)
	}
	return c.JSON(http.StatusOK, map[string]any{"documents": out})
}

func (a *API) traceDocument(c echo.Context, d store.Document) (TraceDocument, error) {
	ctx := c.Request().Context()
	attempts, err := a.store.Attempts(ctx, d.ID)
	if err != nil {
		return TraceDocument{}, err
	}
	resolutions, err := a.store.Resolutions(ctx, d.ID)
	if err != nil {
		return TraceDocument{}, err
	}
	notes, err := a.store.Notifications(ctx, d.Reference)
	if err != nil {
		return TraceDocument{}, err
	}
	nv := make([]notificationView, len(notes))
	for i, n := range notes {
		nv[i] = notificationView{ID: n.ID, EventKey: n.EventKey, EventType: n.EventType, CreatedAt: n.CreatedAt, Attempts: n.Attempts,
			PublishedAt: n.PublishedAt, ParkedAt: n.ParkedAt, ParkedReason: n.ParkedReason}
	}
	return TraceDocument{Document: view(d), Attempts: attemptViews(attempts), Resolutions: resolutionViews(resolutions), Notifications: nv}, nil
}
