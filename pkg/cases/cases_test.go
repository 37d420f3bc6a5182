package cases_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/onceflow/onceflow/pkg/cases"
)

func TestIDRoundTrip(t *testing.T) {
	for _, svc := range cases.Owners {
		id := cases.ID(svc, 17)
		got, n, ok := cases.ParseID(id)
		if !ok || got != svc || n != 17 {
			t.Errorf("ParseID(%q) = %q, %d, %v; want %q, 17, true", id, got, n, ok, svc)
		}
		if n, ok := cases.ParseOwnID(svc, id); !ok || n != 17 {
			t.Errorf("ParseOwnID(%q, %q) = %d, %v; want 17, true", svc, id, n, ok)
		}
		if n, ok := cases.ParseOwnID(svc, "17"); !ok || n != 17 {
			t.Errorf("ParseOwnID(%q, 17) = %d, %v; want 17, true", svc, n, ok)
		}
	}
	for _, bad := range []string{"", "17", "ingest-", "ingest-0", "ingest--3", "relay-4", "ingest-x", "ingest17"} {
		if svc, n, ok := cases.ParseID(bad); ok {
			t.Errorf("ParseID(%q) = %q, %d, true; want refused", bad, svc, n)
		}
	}
	for _, bad := range []string{"", "0", "-1", "invoicer-2", "ingest-x"} {
		if n, ok := cases.ParseOwnID("ingest", bad); ok {
			t.Errorf("ParseOwnID(ingest, %q) = %d, true; want refused", bad, n)
		}
	}
}

func TestActionsPerKind(t *testing.T) {
	want := map[string]string{ // docs/cases.md's table
		cases.UnmatchedPayment:    "reapply,accept_as_sale,separate_sale,refunded_at_psp",
		cases.RefusedRefund:       "reapply,refunded_at_psp,acknowledge",
		cases.ParkedReceipt:       "replay,acknowledge",
		cases.Chargeback:          "acknowledge",
		cases.DocumentRejected:    "reissue",
		cases.DocumentRefused:     "retry,reissue,void",
		cases.NeedsAttention:      "adopt,retry,void",
		cases.ExchangeRateMissing: "retry,void",
		cases.ParkedOutboxRow:     "unpark",
		cases.AuditDisagreement:   "acknowledge",
		cases.MissingDocument:     "acknowledge",
	}
	for kind, w := range want {
		got := cases.Actions(kind)
		if strings.Join(got, ",") != w {
			t.Errorf("Actions(%s) = %v, want %s", kind, got, w)
		}
		if !cases.Closes(kind, got[0]) || cases.Closes(kind, "unknown") {
			t.Errorf("Closes(%s) disagrees with Actions", kind)
		}
		got[0] = "mutated"
		if cases.Actions(kind)[0] == "mutated" {
			t.Errorf("Actions(%s) shares its slice with the table", kind)
		}
	}
	if got := cases.Actions("no_such_kind"); got == nil || len(got) != 0 {
		t.Errorf("Actions(unknown) = %#v, want an empty slice (renders [])", got)
	}
}

// TestViewRendersAsBefore pins the JSON the services answered before the
// view was shared: sorted, HTML-escaped evidence, times as encoding/json
// renders them, empty fields left out.
func TestViewRendersAsBefore(t *testing.T) {
	opened := time.Date(2026, 12, 1, 6, 0, 0, 123456000, time.FixedZone("", -3*3600))
	amount, receipt := int64(125000), int64(7)
	v := cases.View{ID: cases.ID("ingest", 17), Service: "ingest", Kind: cases.UnmatchedPayment, Subject: "payment:D-4-1",
		PSP: "dlocal", AmountMinor: &amount, Currency: "UYU", ReceiptID: &receipt,
		Evidence: cases.Evidence(map[string]any{"reason": "a<b", "order_amount_minor": 120000.0}),
		OpenedAt: cases.Stamp(&opened), UpdatedAt: cases.Stamp(&opened), ClosedAt: cases.Stamp(nil), Actions: []string{}}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"ingest-17","service":"ingest","kind":"unmatched_payment","subject":"payment:D-4-1","psp":"dlocal",` +
		`"amount_minor":125000,"currency":"UYU","receipt_id":7,"evidence":{"order_amount_minor":120000,"reason":"a\u003cb"},` +
		`"opened_at":"2026-12-01T06:00:00.123456-03:00","updated_at":"2026-12-01T06:00:00.123456-03:00","actions":[]}`
	if string(b) != want {
		t.Errorf("View renders\n%s\nwant\n%s", b, want)
	}
	if got := string(cases.Evidence(nil)); got != "{}" {
		t.Errorf("Evidence(nil) = %s, want {}", got)
	}
}

func TestCollectorReportsZerosAndSkipsTheRelays(t *testing.T) {
	stats := func(context.Context) ([]cases.Stat, error) {
		return []cases.Stat{{Kind: cases.DocumentRefused, Open: 2, OldestAge: 90 * time.Second},
			{Kind: cases.ParkedOutboxRow, Open: 5, OldestAge: time.Hour}}, nil
	}
	c := cases.NewCollector("invoicer", []string{cases.DocumentRejected, cases.DocumentRefused}, stats, nil)
	want := `
# HELP onceflow_case_oldest_open_age_seconds Age of the oldest open case by kind, by the database's clock (0 when none is open).
# TYPE onceflow_case_oldest_open_age_seconds gauge
onceflow_case_oldest_open_age_seconds{kind="document_refused",service="invoicer"} 90
onceflow_case_oldest_open_age_seconds{kind="document_rejected",service="invoicer"} 0
# HELP onceflow_cases_open Open cases (docs/cases.md) by kind.
# TYPE onceflow_cases_open gauge
onceflow_cases_open{kind="document_refused",service="invoicer"} 2
onceflow_cases_open{kind="document_rejected",service="invoicer"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorFailure(t *testing.T) {
	boom := errors.New("boom")
	failing := func(context.Context) ([]cases.Stat, error) { return nil, boom }
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cases.NewCollector("ingest", []string{cases.Chargeback}, failing, nil))
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("Gather with no onErr = %v, want the query's error", err)
	}
	var logged []error
	quiet := cases.NewCollector("invoicer", []string{cases.NeedsAttention}, failing, func(err error) { logged = append(logged, err) })
	if n := testutil.CollectAndCount(quiet); n != 0 || !slices.Equal(logged, []error{boom}) {
		t.Errorf("with onErr: %d series, logged %v; want none and [boom]", n, logged)
	}
}
