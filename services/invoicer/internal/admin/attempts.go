package admin

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Attempt pages: a document's provider calls, newest first.
const (
	defaultAttempts = 20
	maxAttempts     = 200
)

type attemptView struct {
	ID        int64     `json:"id"`
	Operation string    `json:"operation"`
	Outcome   string    `json:"outcome"`
	Error     *string   `json:"error,omitempty"`
	LatencyMS int32     `json:"latency_ms"`
	At        time.Time `json:"at"`
}

// attemptsPage is one page of a document's attempts. NextBefore, when set,
// is the attempts_before that asks for the next (older) page.
type attemptsPage struct {
	Attempts   []attemptView
	NextBefore *int64
}

// attemptPage reads the page the query asks for: attempts_limit (1 to 200,
// default 20) attempts of document id with an id below attempts_before
// (default: from the newest).
func (a *API) attemptPage(c echo.Context, id int64) (attemptsPage, error) {
	limit, err := intParam(c, "attempts_limit", defaultAttempts, 1, maxAttempts)
	if err != nil {
		return attemptsPage{}, err
	}
	before, err := intParam(c, "attempts_before", 0, 1, 1<<62)
	if err != nil {
		return attemptsPage{}, err
	}
	rows, err := a.store.AttemptPage(c.Request().Context(), id, before, int32(limit)+1)
	if err != nil {
		return attemptsPage{}, err
	}
	var page attemptsPage
	if int64(len(rows)) > limit {
		rows = rows[:limit]
		next := rows[len(rows)-1].ID
		page.NextBefore = &next
	}
	page.Attempts = attemptViews(rows)
	return page, nil
}

func attemptViews(in []store.Attempt) []attemptView {
	out := make([]attemptView, len(in))
	for i, x := range in {
		out[i] = attemptView{ID: x.ID, Operation: x.Operation, Outcome: x.Outcome, Error: x.Error, LatencyMS: x.LatencyMS, At: x.At}
	}
	return out
}
