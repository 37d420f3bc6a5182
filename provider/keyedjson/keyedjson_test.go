package keyedjson_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/keyedjson"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
)

const token = "keyed-token"

func start(tb testing.TB) (*fiscalsim.Server, string) {
	tb.Helper()
	sb := fiscalsim.New(fiscalsim.Config{EmpCodigo: "x", EmpPK: "y", AccessKey: token})
	srv := httptest.NewServer(sb)
	tb.Cleanup(srv.Close)
	return sb, srv.URL + "/api"
}

func client(tb testing.TB, base, tok string) *keyedjson.Client {
	tb.Helper()
	c, err := keyedjson.New(keyedjson.Config{BaseURL: base, Token: tok, Timeout: 2 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func document(ref string, orig *fiscal.OriginalRef) fiscal.Document {
	typ := fiscal.ETicket
	if orig != nil {
		typ = fiscal.ETicketCreditNote
	}
	return fiscal.Document{Reference: ref, Type: typ, IssueDate: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), Currency: "UYU",
		TotalMinor: 1220_50, Lines: []fiscal.Line{{Description: "Plan", Quantity: 1, UnitMinor: 1220_50, AmountMinor: 1220_50}},
		Original: orig, Addendum: "onceflow payment p1 invoice"}
}

func TestEmitIsIdempotentByReference(t *testing.T) {
	t.Parallel()
	sb, base := start(t)
	c := client(t, base, token)
	ctx := context.Background()
	doc := document("123456789012345678", nil)
	if held, err := c.Lookup(ctx, doc.Reference); err != nil || held != nil {
		t.Fatalf("Lookup before = %v, %v; want nothing", held, err)
	}
	first, err := c.Emit(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Emit(ctx, doc)
	if err != nil || again != first || sb.CountByReference(doc.Reference) != 1 {
		t.Fatalf("second Emit = %+v, %v with %d documents; want the first %+v and one document", again, err, sb.CountByReference(doc.Reference), first)
	}
	if first.Status != fiscal.StatusAuthorized || first.TotalMinor != 1220_50 || first.Number != 1 || first.Addendum != doc.Addendum {
		t.Fatalf("held %+v", first)
	}
	if first.CAEID == "" || first.CAEFrom != 1 || first.CAETo < first.Number || !first.CAEExpires.After(first.IssueDate) || first.VerifyURL == "" {
		t.Fatalf("held %+v lacks its CAE range, expiry or verification URL", first)
	}
	found, err := c.Lookup(ctx, doc.Reference)
	if v, _, _ := fiscal.Classify(doc, found); err != nil || v != fiscal.VerdictAdopt {
		t.Fatalf("Lookup = %+v, %v; want our document", found, err)
	}
	note := document("223456789012345678", &fiscal.OriginalRef{Type: first.Type, Series: first.Series, Number: first.Number, Date: first.IssueDate})
	if _, err := c.Emit(ctx, note); err != nil || sb.Documents()[1].RefersTo[0].Number != 1 {
		t.Fatalf("credit note: %v %+v", err, sb.Documents())
	}
}

func TestOutcomes(t *testing.T) {
	t.Parallel()
	sb, base := start(t)
	ctx := context.Background()
	doc := document("323456789012345678", nil)
	if _, err := client(t, base, "wrong").Emit(ctx, doc); !errors.Is(err, fiscal.ErrRefused) {
		t.Fatalf("wrong token: %v, want refused", err)
	}
	sb.SetRule(doc.Reference, fiscalsim.Rule{FailBefore: 1})
	if _, err := client(t, base, token).Emit(ctx, doc); !errors.Is(err, fiscal.ErrAmbiguous) {
		t.Fatalf("503: %v, want ambiguous", err)
	}
	if _, err := client(t, "http://127.0.0.1:1", token).Emit(ctx, doc); !errors.Is(err, fiscal.ErrRefused) {
		t.Fatalf("connection refused: %v, want refused (never sent)", err)
	}
	if _, err := keyedjson.New(keyedjson.Config{BaseURL: "ftp://x", Token: token, Timeout: time.Second}); err == nil {
		t.Fatal("ftp base accepted")
	}
}

// TestStatusesThatProveNothing: a 408 (or 425, 499) may come from a proxy
// after the request was passed on, so Emit must call it ambiguous; a plain
// 400 stays a refusal.
func TestStatusesThatProveNothing(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]error{408: fiscal.ErrAmbiguous, 425: fiscal.ErrAmbiguous, 499: fiscal.ErrAmbiguous, 400: fiscal.ErrRefused} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
		t.Cleanup(srv.Close)
		if _, err := client(t, srv.URL, token).Emit(context.Background(), document("423456789012345678", nil)); !errors.Is(err, want) {
			t.Errorf("HTTP %d: %v, want %v", status, err, want)
		}
	}
}
