package web

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/console/internal/adminapi"
	"github.com/onceflow/onceflow/services/console/internal/queues"
)

// boardData is the board page's figures.
type boardData struct {
	Board    *adminapi.Board
	Queues   []queues.Depth
	Statuses []string
	Refresh  int64 // milliseconds
	Took     time.Duration
}

// documentStatuses is the order the board lists document statuses in.
var documentStatuses = statusNames(fiscal.Statuses)

func statusNames(ss []fiscal.Status) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

func (h *Handler) boardData(ctx context.Context) boardData {
	start := time.Now()
	d := boardData{Statuses: documentStatuses, Refresh: h.opts.Refresh.Milliseconds()}
	done := make(chan struct{})
	go func() {
		d.Queues = h.queues.Depths(ctx)
		close(done)
	}()
	d.Board = h.api.Board(ctx)
	<-done
	d.Took = time.Since(start)
	return d
}

// board serves the pipeline board, which reloads its figures itself.
func (h *Handler) board(c echo.Context) error {
	return h.render(c, http.StatusOK, "board", "Pipeline", h.boardData(c.Request().Context()))
}

// boardFigures serves the board's figures alone, for the page's refresh.
func (h *Handler) boardFigures(c echo.Context) error {
	csrf, _ := c.Get("csrf").(string)
	var b strings.Builder
	if err := h.pages["board"].ExecuteTemplate(&b, "figures", page{CSRF: csrf, Data: h.boardData(c.Request().Context())}); err != nil {
		return err
	}
	return c.HTML(http.StatusOK, b.String())
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"age": func(t *time.Time) string {
		if t == nil {
			return "—"
		}
		return since(time.Since(*t))
	},
	"ageSeconds": func(s float64) string { return since(time.Duration(s * float64(time.Second))) },
	"stamp":      func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") },
	"money": func(minor *int64, currency string) string {
		if minor == nil {
			return ""
		}
		return money.FormatMinor(*minor) + " " + currency
	},
	"ms": func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) },
	"contains": func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	},
	"traceLink": func(tmpl, id string) string { return strings.ReplaceAll(tmpl, "{trace_id}", id) },
}

// since renders an age coarsely: 42s, 7m, 3h, 2d.
func since(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
