package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/test/e2e/stack"
)

// TestConsole drives the console in a real headless Chromium against the
// real stack: sign in; the board's figures equal the admin APIs'; a
// needs_attention case is opened, resolved with a reason, and its document
// becomes authorized; a trace by PSP payment id shows every hop; a bulk
// action shows its count before it acts; a missing or wrong CSRF token is
// refused; a viewer sees no action buttons and a forged action is refused;
// a reveal of personal data is recorded by ingest and listed.
// Each page's screenshot goes to docs/console.
func TestConsole(t *testing.T) {
	chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := stack.StartWith(ctx, t.TempDir(), stack.Options{Reconciler: true, Console: true,
		Env: []string{"CONSOLE_USERS_FILE=" + usersFile(t), "CONSOLE_REFRESH=1s", "CONSOLE_TRACE_URL=http://tracing.example/trace/{trace_id}",
			"OTEL_TRACES_EXPORTER=console",
			"INVOICER_DGI_POLL_BASE=200ms", "INVOICER_DGI_POLL_CAP=1s"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	defer dumpLogsOnFailure(t, s)
	conn, err := pgx.Connect(ctx, s.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	paymentID, caseID := attentionCase(t, ctx, s)
	base := consoleURL(s)
	tab := browser(t, ctx)

	if err := chromedp.Do(tab, chromedp.Navigate(base+"/"), chromedp.WaitVisible(css("#login"))); err != nil {
		t.Fatalf("an anonymous visit: %v", err)
	}
	screenshot(t, tab, "login")
	signIn(t, tab, base, "ana")
	if c := sessionCookie(t, tab); !c.HTTPOnly || !c.Secure || c.SameSite != "Lax" {
		t.Errorf("session cookie HttpOnly=%v Secure=%v SameSite=%q, want HTTP-only, Secure, Lax", c.HTTPOnly, c.Secure, c.SameSite)
	}

	t.Run("board equals the admin APIs", func(t *testing.T) { checkBoard(t, ctx, s, tab, base) })
	screenshot(t, tab, "board")
	t.Run("board refreshes itself", func(t *testing.T) {
		if _, err := conn.Exec(ctx, `INSERT INTO reconciler.cases (kind, subject, psp, evidence)
VALUES ('audit_disagreement', 'refresh', 'refreshpsp', '{}')`); err != nil {
			t.Fatal(err)
		}
		// No navigation: the page's script must bring the new case in.
		testwait.Until(t, 30*time.Second, 200*time.Millisecond, "the board to show the new case without a reload", func() bool {
			return figures(t, tab)["cases.audit_disagreement"] == "1"
		})
	})

	t.Run("resolve a needs_attention case", func(t *testing.T) {
		err := chromedp.Do(tab, chromedp.Navigate(base+"/cases?kind=needs_attention"), chromedp.WaitVisible(css("#cases")))
		if count := text(t, tab, "#case-count"); err != nil || count != "1" {
			t.Fatalf("inbox filtered by needs_attention: %v, %q case(s), want 1", err, count)
		}
		screenshot(t, tab, "cases")
		sel := `form.action[data-action="retry"]`
		err = chromedp.Do(tab, chromedp.Navigate(base+"/cases/"+caseID), chromedp.WaitVisible(css("#evidence")))
		if err != nil {
			t.Fatal(err)
		}
		screenshot(t, tab, "case")
		// The reason is required: the browser keeps an empty form back.
		// The reason is required: the browser keeps the empty form back.
		if err := chromedp.Do(tab, chromedp.Click(css(sel+" button"))); err != nil {
			t.Fatal(err)
		}
		if st := attr(t, tab, "#case", "data-status"); st != "open" {
			t.Fatalf("a retry without a reason left the case %q", st)
		}
		err = chromedp.Do(tab, chromedp.SendKeys(css(sel+" input.reason"), "fault lifted at the provider; look up again"),
			chromedp.Click(css(sel+" button")), chromedp.WaitVisible(css("#case-closed")))
		if status := attr(t, tab, "#case", "data-status"); err != nil || status != "closed" {
			t.Fatalf("retry the case: %v, status %q", err, status)
		}
		closed := text(t, tab, "#case-closed")
		if !strings.Contains(closed, "retry by ana") || !strings.Contains(closed, "fault lifted") {
			t.Errorf("closed case reads %q, want the action, ana and the reason", closed)
		}
		testwait.Until(t, time.Minute, 300*time.Millisecond, "the document to become authorized on the trace page", func() bool {
			err := chromedp.Do(tab, chromedp.Navigate(base+"/trace?q="+paymentID), chromedp.WaitVisible(css("#timeline")))
			return err == nil && eval[string](t, tab, `[...document.querySelectorAll('tr.hop[data-what="document state"] td')].pop()?.textContent ?? ""`) == "authorized"
		})
	})

	t.Run("trace by PSP payment id shows every hop", func(t *testing.T) { checkTrace(t, tab, base, paymentID) })
	screenshot(t, tab, "trace")

	t.Run("an operator reveals personal data, recorded", func(t *testing.T) { checkReveal(t, ctx, s, conn, tab, base) })

	t.Run("bulk action shows its count first", func(t *testing.T) { checkBulk(t, ctx, conn, tab, base) })

	open := openCase(t, ctx, conn, "csrf")
	t.Run("missing or wrong CSRF token is refused", func(t *testing.T) {
		fields := map[string]string{"action": "acknowledge", "reason": "forged"}
		for token, what := range map[string]string{"": "missing", "not-the-token": "wrong"} {
			if code := post(t, tab, "/cases/"+open+"/resolve", token, fields); code != http.StatusForbidden {
				t.Errorf("%s CSRF token: status %d, want 403", what, code)
			}
		}
		assertOpen(t, ctx, conn, open)
	})

	t.Run("bad input is refused naming the field", func(t *testing.T) {
		client := signedIn(t, s)
		for path, field := range map[string]string{"/cases?min_age=soon": "min_age", "/cases?kind=nope": "kind", "/cases?min_amount=12x": "min_amount"} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.ConsoleURL+path, nil)
			req.Header.Set("Accept", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				Error struct{ Code, Message string }
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || body.Error.Code != "invalid_"+field || !strings.Contains(body.Error.Message, field) {
				t.Errorf("GET %s: %d %+v, want 400 naming %s", path, resp.StatusCode, body, field)
			}
		}
		if code := post(t, tab, "/cases/"+open+"/resolve", "page", map[string]string{"action": "acknowledge"}); code != http.StatusBadRequest {
			t.Errorf("an action without a reason: %d, want 400", code)
		}
		assertOpen(t, ctx, conn, open)
	})

	t.Run("viewer sees no actions and a forged one is refused", func(t *testing.T) {
		signOut(t, tab)
		signIn(t, tab, base, "vic")
		err := chromedp.Do(tab, chromedp.Navigate(base+"/cases/"+open), chromedp.WaitVisible(css("#evidence")))
		if forms := eval[int](t, tab, `document.querySelectorAll("form.action, #bulk-form, button.do-action").length`); err != nil || forms != 0 {
			t.Fatalf("viewer's case page: %v, %d action form(s), want none", err, forms)
		}
		screenshot(t, tab, "case-viewer")
		if code := post(t, tab, "/cases/"+open+"/resolve", "page", map[string]string{"action": "acknowledge", "reason": "forged"}); code != http.StatusForbidden {
			t.Errorf("viewer's forged action with a valid CSRF token: status %d, want 403", code)
		}
		assertOpen(t, ctx, conn, open)
	})
}

// attentionCase pays an order whose document the fiscal sandbox answers
// wrongly (one cent more), so the invoicer parks it in needs_attention,
// then lifts the fault; the sandbox keeps the document pending at DGI for
// its first three queries, so the operator's retry finds it pending and
// the invoicer polls DGI until it is authorized. It returns the payment id
// and the case's id.
func attentionCase(t *testing.T, ctx context.Context, s *stack.Stack) (string, string) {
	t.Helper()
	if err := s.Sandbox(ctx, http.MethodPut, "/sandbox/faults/*", map[string]any{"wrong_answer": "total", "pending_polls": 3}); err != nil {
		t.Fatal(err)
	}
	paymentID, err := s.Pay(ctx, "console-1", 12200)
	if err != nil {
		t.Fatal(err)
	}
	var caseID string
	testwait.Until(t, 2*time.Minute, 200*time.Millisecond, "a needs_attention case for "+paymentID, func() bool {
		var page struct {
			Cases []struct{ ID, PSPPaymentID, SourceRef string }
		}
		if err := s.Admin(ctx, s.AdminURL("reconciler-1"), http.MethodGet, "/admin/cases?kind=needs_attention", nil, &page); err != nil {
			return false
		}
		if len(page.Cases) == 1 {
			caseID = page.Cases[0].ID
		}
		return caseID != ""
	})
	if err := s.Sandbox(ctx, http.MethodDelete, "/sandbox/faults", nil); err != nil {
		t.Fatal(err)
	}
	return paymentID, caseID
}

// checkBoard waits until the admin APIs give the same figures twice in a
// row with the board read in between, then requires the board to show
// exactly those.
func checkBoard(t *testing.T, ctx context.Context, s *stack.Stack, tab context.Context, base string) {
	var last string
	testwait.Until(t, time.Minute, 500*time.Millisecond, "the board to show the admin APIs' figures", func() bool {
		before := apiFigures(t, ctx, s)
		if err := chromedp.Do(tab, chromedp.Navigate(base+"/"), chromedp.WaitVisible(css("#stages"))); err != nil {
			return false
		}
		board := figures(t, tab)
		after := apiFigures(t, ctx, s)
		if fmt.Sprint(before) != fmt.Sprint(after) {
			return false // the pipeline moved meanwhile
		}
		last = ""
		for k, want := range before {
			if board[k] != want {
				last += fmt.Sprintf("%s: board %q, API %q; ", k, board[k], want)
			}
		}
		return last == ""
	})
	if last != "" {
		t.Fatal(last)
	}
}

// apiFigures reads from the admin APIs the figures the board shows.
func apiFigures(t *testing.T, ctx context.Context, s *stack.Stack) map[string]string {
	t.Helper()
	var in struct {
		Receipts struct{ Pending, Parked int64 }
	}
	var inv struct {
		Documents map[string]int64
		Due       struct{ Pending, Parked int64 }
		Cases     []struct {
			Kind string
			Open int64
		}
	}
	var ob struct {
		Outboxes []struct {
			Outbox          string
			Pending, Parked int64
		}
	}
	for _, c := range []struct {
		name, path string
		out        any
	}{{"ingest-1", "/admin/board", &in}, {"invoicer-1", "/admin/board", &inv}, {"relay-1", "/admin/outboxes", &ob}} {
		if err := s.Admin(ctx, s.AdminURL(c.name), http.MethodGet, c.path, nil, c.out); err != nil {
			t.Fatalf("%s %s: %v", c.name, c.path, err)
		}
	}
	f := map[string]string{"receipts.pending": itoa(in.Receipts.Pending), "receipts.parked": itoa(in.Receipts.Parked),
		"documents.due": itoa(inv.Due.Pending), "documents.attention": itoa(inv.Due.Parked)}
	for status, n := range inv.Documents {
		f["documents."+status] = itoa(n)
	}
	for _, c := range inv.Cases {
		f["cases."+c.Kind] = itoa(c.Open)
	}
	for _, o := range ob.Outboxes {
		f["outbox."+o.Outbox+".pending"], f["outbox."+o.Outbox+".parked"] = itoa(o.Pending), itoa(o.Parked)
	}
	return f
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
