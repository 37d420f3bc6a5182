package invoicy_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/invoicy"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
)

const (
	sbEmpCodigo = "SUC-SANDBOX"
	sbEmpPK     = "PK-SANDBOX"
	sbAccessKey = "CLAVE-SANDBOX"
)

// startSandbox runs the fiscal sandbox and returns it with its InvoiCy base
// URL (under /InvoiCy/, like the real hosts).
func startSandbox(tb testing.TB) (*fiscalsim.Server, string) {
	tb.Helper()
	sb := fiscalsim.New(fiscalsim.Config{EmpCodigo: sbEmpCodigo, EmpPK: sbEmpPK, AccessKey: sbAccessKey})
	srv := httptest.NewServer(sb)
	tb.Cleanup(srv.Close)
	return sb, srv.URL + "/InvoiCy/"
}

func sandboxClient(tb testing.TB, baseURL, accessKey string) *invoicy.Client {
	tb.Helper()
	c, err := invoicy.New(invoicy.Config{
		BaseURL: baseURL, EmpCodigo: sbEmpCodigo, EmpPK: sbEmpPK, AccessKey: accessKey, Timeout: 5 * time.Second,
	}, nil)
	if err != nil {
		tb.Fatalf("invoicy.New: %v", err)
	}
	return c
}

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// sandboxDoc builds a document for a source whose id and buyer need XML
// escaping, so EmpCK is checked over escaped bytes.
func sandboxDoc(sourceKind, sourceRef string, kind fiscal.Kind, buyer fiscal.Buyer, orig *fiscal.OriginalRef) fiscal.Document {
	return fiscal.Document{
		Reference:  fiscal.Reference(sourceKind, sourceRef, kind),
		Type:       fiscal.TypeFor(buyer, kind),
		IssueDate:  date(2026, 11, 30),
		Currency:   "UYU",
		TotalMinor: 122050,
		Buyer:      buyer,
		Lines:      []fiscal.Line{{Description: `Plan "Pro" & <más>`, Quantity: 1, UnitMinor: 122050, AmountMinor: 122050}},
		Original:   orig,
		Addendum:   fiscal.Addendum(sourceKind, sourceRef, kind),
	}
}

func checkHeld(tb testing.TB, got fiscal.Held, doc fiscal.Document) {
	tb.Helper()
	if got.Reference != doc.Reference || got.Type != doc.Type || got.Addendum != doc.Addendum ||
		got.TotalMinor != doc.TotalMinor || got.Currency != doc.Currency || !got.IssueDate.Equal(doc.IssueDate) {
		tb.Errorf("held %+v does not round-trip %+v", got, doc)
	}
	if got.Status != fiscal.StatusAuthorized || got.ProviderStatus != "5" {
		tb.Errorf("status %q (%q), want authorized (5)", got.Status, got.ProviderStatus)
	}
	if got.Series == "" || got.Number <= 0 || got.SecurityCode == "" || got.CAEID == "" || got.VerifyURL == "" {
		tb.Errorf("held lacks provider numbering: %+v", got)
	}
	if got.CAEFrom <= 0 || got.CAETo < got.Number || got.Number < got.CAEFrom || !got.CAEExpires.After(got.IssueDate) {
		tb.Errorf("held's CAE range %d-%d (expires %s) does not cover number %d issued %s",
			got.CAEFrom, got.CAETo, got.CAEExpires.Format(time.DateOnly), got.Number, got.IssueDate.Format(time.DateOnly))
	}
}

func TestSandboxRoundTrip(t *testing.T) {
	t.Parallel()
	sb, base := startSandbox(t)
	c := sandboxClient(t, base, sbAccessKey)
	ctx := t.Context()
	buyer := fiscal.Buyer{
		DocType: fiscal.DocRUT, Country: "UY", Number: "210000000019", Name: `Acme & "Hijos" <SA>`,
		Address: "Av. 18 de Julio 1234", City: "Montevideo", Department: "Montevideo", Email: "ap@acme.example",
	}
	inv := sandboxDoc("payment", "D-4-a&b<c>", fiscal.KindInvoice, buyer, nil)

	if held, err := c.Lookup(ctx, inv.Reference); err != nil || len(held) != 0 {
		t.Fatalf("Lookup before emit = %+v, %v; want nothing", held, err)
	}
	emitted, err := c.Emit(ctx, inv)
	if err != nil {
		t.Fatalf("Emit invoice: %v", err)
	}
	checkHeld(t, emitted, inv)
	if emitted.Type != fiscal.EFactura {
		t.Errorf("type %d, want e-Factura", emitted.Type)
	}

	found, err := c.Lookup(ctx, inv.Reference)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	verdict, adopted, reason := fiscal.Classify(inv, found)
	if verdict != fiscal.VerdictAdopt || adopted != emitted {
		t.Fatalf("Classify = %s %q\n adopted %+v\n emitted %+v", verdict, reason, adopted, emitted)
	}

	orig := &fiscal.OriginalRef{Type: emitted.Type, Series: emitted.Series, Number: emitted.Number, Date: emitted.IssueDate}
	note := sandboxDoc("refund", "REF-1", fiscal.KindCreditNote, buyer, orig)
	noted, err := c.Emit(ctx, note)
	if err != nil {
		t.Fatalf("Emit credit note: %v", err)
	}
	checkHeld(t, noted, note)
	if noted.Type != fiscal.EFacturaCreditNote {
		t.Errorf("type %d, want e-Factura credit note", noted.Type)
	}

	period, err := c.ListPeriod(ctx, date(2026, 11, 30), date(2026, 11, 30))
	if err != nil || len(period) != 2 {
		t.Fatalf("ListPeriod = %+v, %v; want both documents", period, err)
	}
	if period[0] != emitted || period[1] != noted {
		t.Errorf("ListPeriod\n got %+v\nwant %+v and %+v", period, emitted, noted)
	}
	if other, err := c.ListPeriod(ctx, date(2026, 12, 1), date(2026, 12, 31)); err != nil || len(other) != 0 {
		t.Errorf("ListPeriod of December = %+v, %v; want nothing", other, err)
	}
	if slice, err := c.ListNumbers(ctx, date(2026, 11, 30), fiscal.EFactura, emitted.Number, emitted.Number); err != nil || len(slice) != 1 || slice[0] != emitted {
		t.Errorf("ListNumbers of the invoice's type and number = %+v, %v; want the invoice alone", slice, err)
	}
	if slice, err := c.ListNumbers(ctx, date(2026, 11, 30), fiscal.EFactura, emitted.Number+1, emitted.Number+1000); err != nil || len(slice) != 0 {
		t.Errorf("ListNumbers above the invoice's number = %+v, %v; want nothing", slice, err)
	}
	if _, err := c.ListNumbers(ctx, date(2026, 11, 30), fiscal.EFactura, 5, 4); !errors.Is(err, fiscal.ErrRefused) {
		t.Errorf("ListNumbers of a reversed range: %v, want refused before sending", err)
	}
	for _, ref := range []string{inv.Reference, note.Reference} {
		if n := sb.CountByReference(ref); n != 1 {
			t.Errorf("sandbox holds %d documents under %s, want 1", n, ref)
		}
	}
}

func TestSandboxAnonymousTicketAndDuplicate(t *testing.T) {
	t.Parallel()
	sb, base := startSandbox(t)
	c := sandboxClient(t, base, sbAccessKey)
	doc := sandboxDoc("payment", "D-4-anon", fiscal.KindInvoice, fiscal.Buyer{}, nil)
	first, err := c.Emit(t.Context(), doc)
	if err != nil {
		t.Fatalf("Emit: %v", err)
	}
	checkHeld(t, first, doc)
	if first.Type != fiscal.ETicket {
		t.Errorf("type %d, want e-Ticket", first.Type)
	}
	// The sandbox, like InvoiCy as far as anyone knows, does not deduplicate:
	// a blind resend issues a second document, and the look-up says so.
	if _, err := c.Emit(t.Context(), doc); err != nil {
		t.Fatalf("second Emit: %v", err)
	}
	held, err := c.Lookup(t.Context(), doc.Reference)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	if v, _, reason := fiscal.Classify(doc, held); v != fiscal.VerdictConflict || !strings.Contains(reason, "2 documents") {
		t.Errorf("Classify = %s %q, want a conflict over 2 documents", v, reason)
	}
	if n := sb.CountByReference(doc.Reference); n != 2 {
		t.Errorf("sandbox holds %d documents, want 2", n)
	}
}

func TestSandboxWrongAccessKey(t *testing.T) {
	t.Parallel()
	sb, base := startSandbox(t)
	c := sandboxClient(t, base, "not-the-key")
	doc := sandboxDoc("payment", "D-4-key", fiscal.KindInvoice, fiscal.Buyer{}, nil)

	_, err := c.Emit(t.Context(), doc)
	if !errors.Is(err, fiscal.ErrRefused) || errors.Is(err, fiscal.ErrAmbiguous) {
		t.Fatalf("Emit with a wrong access key = %v, want fiscal.ErrRefused", err)
	}
	if _, err := c.Lookup(t.Context(), doc.Reference); !errors.Is(err, fiscal.ErrRefused) {
		t.Errorf("Lookup with a wrong access key = %v, want an error", err)
	}
	if _, err := c.ListPeriod(t.Context(), date(2026, 11, 1), date(2026, 11, 30)); err == nil {
		t.Error("ListPeriod with a wrong access key succeeded")
	}
	if n := sb.CountByReference(doc.Reference); n != 0 {
		t.Errorf("sandbox stored %d documents on a refused request", n)
	}
}
