package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// checkTrace searches a payment id in the trace box and requires every
// hop of its way through the pipeline on the timeline, then finds the same
// payment by its trace id and by its document's CFE series and number. It
// leaves the payment's trace open.
func checkTrace(t *testing.T, tab context.Context, base, paymentID string) {
	err := chromedp.Do(tab, chromedp.Navigate(base+"/trace"), chromedp.WaitVisible(css("#q")),
		chromedp.SendKeys(css("#q"), paymentID), chromedp.Click(css("#search")), chromedp.WaitVisible(css("#timeline")))
	if err != nil {
		t.Fatal(err)
	}
	hops := eval[[]string](t, tab, `[...document.querySelectorAll("tr.hop")].map(r => r.dataset.what + " | " + r.textContent)`)
	links := eval[int](t, tab, `document.querySelectorAll("a.trace-link").length`)
	all := strings.Join(hops, "\n")
	for _, want := range []string{"order recorded", "webhook received", "signature verified", "re-fetched from the PSP and applied",
		"payment recorded", "payment paid", "outbox row written", "published to SQS", "document recorded", "provider send",
		"provider look-up", "operator resolution", "retry by ana", "DGI poll", "document state", "invoicer row",
		"PSP re-fetch", "payment of " + paymentID} {
		if !strings.Contains(all, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "Demo Buyer") || strings.Contains(all, "19119365") || strings.Contains(all, "@example.com") {
		t.Errorf("the timeline shows personal data:\n%s", all)
	}
	// The sandbox kept the document pending at DGI: the timeline shows the
	// invoicer's status polls, each with its latency, before the document
	// became authorized (the subtest before waited for that).
	polls := eval[[]string](t, tab, `[...document.querySelectorAll('tr.hop[data-what="DGI poll"]')].map(r => r.textContent)`)
	if len(polls) == 0 || !slices.ContainsFunc(polls, func(p string) bool { return strings.Contains(p, " ms") }) {
		t.Errorf("the timeline's DGI polls are %q, want the polls of the pending document with their latency", polls)
	}
	if fetch := eval[string](t, tab, `document.querySelector('tr.hop[data-what="PSP re-fetch"]')?.textContent ?? ""`); !strings.Contains(fetch, " ms") || !strings.Contains(fetch, "found") {
		t.Errorf("the PSP re-fetch reads %q, want its latency and outcome", fetch)
	}
	if links == 0 {
		t.Fatal("no link to the tracing backend, though CONSOLE_TRACE_URL is set")
	}
	// The same money by its trace id, and by its CFE series and number
	// (which only the invoicer knows; the console asks ingest about the
	// document's payment).
	traceID := text(t, tab, "a.trace-link")
	cfe := eval[string](t, tab, `(document.querySelector('tr.hop[data-what="document recorded"]')?.textContent.match(/CFE ([A-Z]+-[0-9]+)/) || [])[1] ?? ""`)
	if cfe == "" {
		t.Fatalf("the document's CFE series and number are not on the timeline:\n%s", all)
	}
	for _, q := range []string{traceID, cfe} {
		err := chromedp.Do(tab, chromedp.Navigate(base+"/trace?q="+q), chromedp.WaitVisible(css("#timeline")))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(eval[[]string](t, tab, `[...document.querySelectorAll("tr.hop")].map(r => r.textContent)`), "\n")
		if !strings.Contains(got, "payment "+paymentID) || !strings.Contains(got, "provider send") {
			t.Errorf("trace by %q lacks the payment or its document:\n%s", q, got)
		}
	}
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/trace?q="+paymentID), chromedp.WaitVisible(css("#timeline"))); err != nil {
		t.Fatal(err)
	}
}

// checkBulk opens two audit disagreements, filters the inbox to them,
// previews acknowledge (which must say 2 and change nothing), then
// confirms it with a reason.
func checkBulk(t *testing.T, ctx context.Context, conn *pgx.Conn, tab context.Context, base string) {
	a, b := openCase(t, ctx, conn, "bulk-a"), openCase(t, ctx, conn, "bulk-b")
	err := chromedp.Do(tab, chromedp.Navigate(base+"/cases?kind=audit_disagreement&psp=bulkpsp"), chromedp.WaitVisible(css("#bulk-form")),
		chromedp.SetValue(css("#bulk-action"), "acknowledge"), chromedp.Click(css("#bulk-preview")), chromedp.WaitVisible(css("#bulk-count")))
	if count := attr(t, tab, "#bulk-count", "data-count"); err != nil || count != "2" {
		t.Fatalf("bulk preview: %v, count %q, want 2", err, count)
	}
	screenshot(t, tab, "bulk-confirm")
	assertOpen(t, ctx, conn, a)
	assertOpen(t, ctx, conn, b)
	err = chromedp.Do(tab, chromedp.SendKeys(css("#bulk-reason"), "both checked at the provider"), chromedp.Click(css("#bulk-confirm")),
		chromedp.WaitVisible(css("#bulk-result")))
	if done := text(t, tab, "#bulk-done"); err != nil || done != "2" {
		t.Fatalf("bulk apply: %v, %q closed, want 2", err, done)
	}
	for _, id := range []string{a, b} {
		var by, reason string
		n := strings.TrimPrefix(id, "reconciler-")
		if err := conn.QueryRow(ctx, `SELECT closed_by, reason FROM reconciler.cases WHERE id = $1 AND closed_at IS NOT NULL`, n).Scan(&by, &reason); err != nil ||
			by != "ana" || reason != "both checked at the provider" {
			t.Errorf("case %s after the bulk action: closed_by %q reason %q (%v), want ana and the reason", id, by, reason, err)
		}
	}
}

// openCase inserts an open audit_disagreement case at the reconciler (PSP
// "bulkpsp") and returns its id.
func openCase(t *testing.T, ctx context.Context, conn *pgx.Conn, subject string) string {
	t.Helper()
	var id int64
	err := conn.QueryRow(ctx, `INSERT INTO reconciler.cases (kind, subject, psp, amount_minor, currency, evidence)
VALUES ('audit_disagreement', $1, 'bulkpsp', 500, 'UYU', '{"detail":"test"}') RETURNING id`, subject).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("reconciler-%d", id)
}

// assertOpen requires reconciler case id to be open still.
func assertOpen(t *testing.T, ctx context.Context, conn *pgx.Conn, id string) {
	t.Helper()
	var open bool
	if err := conn.QueryRow(ctx, `SELECT closed_at IS NULL FROM reconciler.cases WHERE id = $1`, strings.TrimPrefix(id, "reconciler-")).Scan(&open); err != nil || !open {
		t.Errorf("case %s is no longer open (%v)", id, err)
	}
}

// checkReveal reveals the traced payment's customer (the trace page must
// be open): the data shows only after a reason is given; ingest records
// who revealed which customer and why (without the data), and the Reveals
// page lists it; the console's audit log names the user, never the data.
func checkReveal(t *testing.T, ctx context.Context, s *stack.Stack, conn *pgx.Conn, tab context.Context, base string) {
	err := chromedp.Do(tab, chromedp.SendKeys(css(`form[action^="/customers/"] input[name=reason]`), "buyer asked for a copy"),
		chromedp.Click(css(`form[action^="/customers/"] button`)), chromedp.WaitVisible(css("#personal-data")))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, tab, "#personal-data"); !strings.Contains(got, "Demo Buyer console-1") || !strings.Contains(got, "19119365") {
		t.Fatalf("revealed data reads %q, want the buyer's name and document", got)
	}
	screenshot(t, tab, "reveal")
	var record string
	if err := conn.QueryRow(ctx, `SELECT row_to_json(r)::text FROM ingest.reveals r WHERE actor = 'ana'`).Scan(&record); err != nil {
		t.Fatalf("ingest recorded no reveal by ana: %v", err)
	}
	if !strings.Contains(record, `"subject":"customer:`) || !strings.Contains(record, "buyer asked for a copy") {
		t.Errorf("ingest's record %s, want the customer and the reason", record)
	}
	err = chromedp.Do(tab, chromedp.Navigate(base+"/reveals"), chromedp.WaitVisible(css("#reveals")))
	listed := eval[[]string](t, tab, `[...document.querySelectorAll("tr.reveal")].map(r => r.textContent)`)
	if err != nil || len(listed) != 1 || !strings.Contains(listed[0], "ana") || !strings.Contains(listed[0], "buyer asked for a copy") {
		t.Errorf("the Reveals page: %v, %q, want ana's reveal with her reason", err, listed)
	}
	screenshot(t, tab, "reveals")
	logs, err := os.ReadFile(filepath.Join(s.Dir, "console-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), `"msg":"personal data revealed","user":"ana","customer":"`) {
		t.Errorf("the console's log does not record ana's reveal:\n%s", logs)
	}
	for _, pd := range []string{"Demo Buyer", "19119365", "@example.com"} {
		if strings.Contains(record, pd) || strings.Contains(strings.Join(listed, ""), pd) {
			t.Errorf("the reveal's record or the Reveals page holds personal data %q", pd)
		}
	}
	for _, secret := range []string{"Demo Buyer", "19119365", "@example.com", "buyer asked"} {
		if strings.Contains(string(logs), secret) {
			t.Errorf("the console's log holds %q", secret)
		}
	}
}
