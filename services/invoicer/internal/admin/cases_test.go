package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/services/invoicer/internal/admin"
	"github.com/onceflow/onceflow/services/invoicer/internal/consumer"
	"github.com/onceflow/onceflow/services/invoicer/internal/emit"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// caseKit is the admin API and an emitter over one test environment.
type caseKit struct {
	env *invoicertest.Env
	e   *echo.Echo
	em  *emit.Emitter
}

func newCaseKit(t *testing.T) caseKit {
	t.Helper()
	env := invoicertest.New(t)
	srv := httpserver.New(zaptest.NewLogger(t), httpserver.Addrs{Public: "127.0.0.1:0", Admin: "127.0.0.1:0"}, prometheus.NewRegistry())
	admin.New(env.Store, nil, zaptest.NewLogger(t), nil).Register(srv.Admin("tok"))
	summary, err := fiscal.NewDailySummary(48, 5000)
	if err != nil {
		t.Fatal(err)
	}
	cfg := emit.Config{Batch: 10, Lease: 10 * time.Second, Poll: 10 * time.Millisecond, Settle: 300 * time.Millisecond,
		Retry:   backoff.Policy{Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond},
		DGIPoll: backoff.Policy{Base: time.Millisecond, Cap: 5 * time.Millisecond}, Summary: summary,
		CreditNoteWait: time.Minute, RefusedCaseAfter: 2, Rates: store.Rates{Store: env.Store}}
	em := emit.New(env.Store, env.Client(t, 5*time.Second), zaptest.NewLogger(t), prometheus.NewRegistry(), cfg)
	return caseKit{env: env, e: srv.AdminEcho(), em: em}
}

// call sends an admin request and decodes its JSON answer into out (when
// set); it returns the status code.
func (k caseKit) call(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	k.e.ServeHTTP(rec, req)
	if out != nil && rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return rec.Code
}

// until runs emission rounds until document ref satisfies done.
func (k caseKit) until(t *testing.T, ref string, done func(store.Document) bool) store.Document {
	t.Helper()
	var d store.Document
	testwait.Until(t, 30*time.Second, 5*time.Millisecond, "document "+ref, func() bool {
		if d = k.env.Document(t, ref); done(d) {
			return true
		}
		if _, err := k.em.Round(context.Background()); err != nil {
			t.Fatalf("round: %v", err)
		}
		return false
	})
	return d
}

func final(d store.Document) bool { return d.Status.Final() || d.Status == fiscal.StatusNeedsAttention }

// theCase returns the only open case of kind, through the API.
func (k caseKit) theCase(t *testing.T, kind string) cases.View {
	t.Helper()
	var out struct{ Cases []cases.View }
	if code := k.call(t, http.MethodGet, "/admin/cases?status=open&kind="+kind, "", &out); code != http.StatusOK || len(out.Cases) != 1 {
		t.Fatalf("open %s cases: %d %+v, want exactly one", kind, code, out.Cases)
	}
	return out.Cases[0]
}

func (k caseKit) resolve(t *testing.T, id, body string, out any) int {
	t.Helper()
	return k.call(t, http.MethodPost, "/admin/cases/"+id+"/resolve", body, out)
}

// A USD document without a rate for its date opens exchange_rate_missing;
// once the rate is in invoicer.rates, the operator's retry sends it with
// that rate and closes the case.
func TestMissingRateCaseIsRetried(t *testing.T) {
	t.Parallel()
	k := newCaseKit(t)
	ev := invoicertest.Payment("pay-norate", 49_99, true)
	ev.Currency = "USD"
	d := k.env.Record(t, ev)
	if _, err := k.em.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := k.theCase(t, cases.ExchangeRateMissing)
	if c.DocumentID == nil || *c.DocumentID != d.ID || strings.Join(c.Actions, ",") != "retry,void" || len(k.env.Sandbox.Documents()) != 0 {
		t.Fatalf("case %+v, %d sent; want an exchange_rate_missing case on the document offering retry, void, nothing sent", c, len(k.env.Sandbox.Documents()))
	}
	if err := k.env.Store.SaveRate(context.Background(), "USD", time.Now().In(fiscal.Montevideo), big.NewRat(40123, 1000), "file", true); err != nil {
		t.Fatal(err)
	}
	if code := k.resolve(t, c.ID, `{"action":"retry","actor":"ana","reason":"loaded the rate"}`, nil); code != http.StatusOK {
		t.Fatalf("retry: %d, want 200", code)
	}
	d = k.until(t, d.Reference, final)
	if docs := k.env.Sandbox.Documents(); d.Status != fiscal.StatusAuthorized || len(docs) != 1 || docs[0].ExchangeRate != "40.123" {
		t.Fatalf("document %s, sandbox %+v; want authorized at 40.123", d.Status, docs)
	}
}

func TestRejectedInvoiceIsReissuedAndItsCreditNoteFollows(t *testing.T) {
	t.Parallel()
	k := newCaseKit(t)
	inv := k.env.Record(t, invoicertest.Payment("pay-reissue", 1_220_00, false))
	note := k.env.Record(t, invoicertest.Refund("ref-reissue", "pay-reissue", 1_000_00))
	k.env.Sandbox.SetRule(inv.Reference, fiscalsim.Rule{Reject: true})

	inv = k.until(t, inv.Reference, final)
	c := k.theCase(t, cases.DocumentRejected)
	if inv.Status != fiscal.StatusRejected || c.DocumentID == nil || *c.DocumentID != inv.ID || strings.Join(c.Actions, ",") != "reissue" {
		t.Fatalf("invoice %s, case %+v; want rejected with a document_rejected case offering reissue", inv.Status, c)
	}
	if code := k.resolve(t, c.ID, `{"action":"retry","actor":"ana","reason":"x"}`, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("retry on a rejected document: %d, want 422", code)
	}
	if code := k.resolve(t, c.ID, `{"action":"reissue","actor":"","reason":"x"}`, nil); code != http.StatusBadRequest {
		t.Fatalf("no actor: %d, want 400", code)
	}
	var closed cases.View
	if code := k.resolve(t, c.ID, `{"action":"reissue","actor":"ana","reason":"buyer data corrected"}`, &closed); code != http.StatusOK ||
		closed.ClosedAt == "" || closed.ClosedBy != "ana" || closed.Action != "reissue" || closed.Reason != "buyer data corrected" {
		t.Fatalf("reissue: %d %+v, want the closed case with who, what and why", code, closed)
	}
	if code := k.resolve(t, c.ID, `{"action":"reissue","actor":"ana","reason":"again"}`, nil); code != http.StatusConflict {
		t.Fatalf("resolving twice: %d, want 409", code)
	}

	again, err := k.env.Store.InvoiceOf(context.Background(), "pay-reissue")
	if err != nil || again.ID == inv.ID || again.Revision != 1 || deref(again.ReplacesID) != inv.ID ||
		again.Reference == inv.Reference || again.Reference != fiscal.RevisionReferences("payment", "pay-reissue", fiscal.KindInvoice, 1)[0] {
		t.Fatalf("invoice of the payment: id %d revision %d replacing %v under %s, %v; want revision 1 under a new reference replacing %d",
			again.ID, again.Revision, again.ReplacesID, again.Reference, err, inv.ID)
	}
	// A redelivered billing event records nothing: the payment keeps one live invoice.
	p, err := consumer.Params(invoicertest.Payment("pay-reissue", 1_220_00, false))
	if err != nil {
		t.Fatal(err)
	}
	if rec := k.env.Store.RecordDocuments(context.Background(), []store.NewDocument{p})[0]; !errors.Is(rec.Err, store.ErrDuplicate) {
		t.Fatalf("redelivered event: %+v, want a duplicate", rec)
	}
	again = k.until(t, again.Reference, final)
	note = k.until(t, note.Reference, final)
	if again.Status != fiscal.StatusAuthorized || note.Status != fiscal.StatusAuthorized {
		t.Fatalf("re-issued invoice %s, credit note %s; want both authorized", again.Status, note.Status)
	}
	if old := k.env.Document(t, inv.Reference); old.Status != fiscal.StatusRejected {
		t.Fatalf("the rejected invoice is now %s, want it kept rejected", old.Status)
	}
	var refers []fiscalsim.DocumentRef
	for _, d := range k.env.Sandbox.Documents() {
		if d.Reference == note.Reference {
			refers = d.RefersTo
		}
	}
	if len(refers) != 1 || refers[0].Series != *again.ProviderSeries || refers[0].Number != int(*again.ProviderNumber) {
		t.Fatalf("credit note refers to %+v, want the re-issued invoice %s-%d", refers, *again.ProviderSeries, *again.ProviderNumber)
	}
}

func TestRefusedDocumentIsRetriedOrVoided(t *testing.T) {
	t.Parallel()
	k := newCaseKit(t)
	retried := k.env.Record(t, invoicertest.Payment("pay-refused-retry", 500_00, false))
	k.env.Sandbox.SetRule(retried.Reference, fiscalsim.Rule{Refuse: true})

	k.until(t, retried.Reference, func(d store.Document) bool { return d.Refusals >= 2 })
	c := k.theCase(t, cases.DocumentRefused)
	if strings.Join(c.Actions, ",") != "retry,reissue,void" {
		t.Fatalf("actions %v, want retry, reissue and void", c.Actions)
	}
	if code := k.resolve(t, c.ID, `{"action":"unpark","actor":"ana","reason":"x"}`, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("a bad action: %d, want 422", code)
	}
	k.env.Sandbox.SetRule(retried.Reference, fiscalsim.Rule{}) // the provider's fault is fixed
	if code := k.resolve(t, c.ID, `{"action":"retry","actor":"ana","reason":"provider fixed the series"}`, nil); code != http.StatusOK {
		t.Fatalf("retry: %d", code)
	}
	if d := k.env.Document(t, retried.Reference); d.Refusals != 0 {
		t.Fatalf("refusals %d after retry, want 0", d.Refusals)
	}
	if d := k.until(t, retried.Reference, final); d.Status != fiscal.StatusAuthorized || k.env.Sandbox.CountByReference(d.Reference) != 1 {
		t.Fatalf("retried document %s, %d at the provider; want authorized once", d.Status, k.env.Sandbox.CountByReference(d.Reference))
	}

	voided := k.env.Record(t, invoicertest.Payment("pay-refused-void", 700_00, false))
	k.env.Sandbox.SetRule(voided.Reference, fiscalsim.Rule{Refuse: true})
	k.until(t, voided.Reference, func(d store.Document) bool { return d.Refusals >= 2 })
	c = k.theCase(t, cases.DocumentRefused)
	if code := k.resolve(t, c.ID, `{"action":"void","actor":"ana","reason":"sale cancelled"}`, nil); code != http.StatusOK {
		t.Fatalf("void: %d", code)
	}
	k.env.Sandbox.SetRule(voided.Reference, fiscalsim.Rule{})
	before := len(k.env.Attempts(t, voided.ID))
	for range 5 {
		if _, err := k.em.Round(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if d := k.env.Document(t, voided.Reference); d.Status != fiscal.StatusVoided || len(k.env.Attempts(t, d.ID)) != before ||
		k.env.Sandbox.CountByReference(d.Reference) != 0 {
		t.Fatalf("voided document %s with %d calls (%d before); want voided and never sent again", d.Status, len(k.env.Attempts(t, d.ID)), before)
	}
	var list struct{ Cases []cases.View }
	if code := k.call(t, http.MethodGet, "/admin/cases?status=closed", "", &list); code != http.StatusOK || len(list.Cases) != 2 {
		t.Fatalf("closed cases: %d %+v, want the two resolved", code, list.Cases)
	}
	if code := k.call(t, http.MethodGet, "/admin/cases/invoicer-"+strconv.Itoa(999), "", nil); code != http.StatusNotFound {
		t.Fatalf("unknown case: %d, want 404", code)
	}
}

func TestNeedsAttentionCaseClosesWithItsDocument(t *testing.T) {
	t.Parallel()
	k := newCaseKit(t)
	note := k.env.Record(t, invoicertest.Refund("ref-orphan-admin", "pay-never", 100_00))
	k.em = emit.New(k.env.Store, k.env.Client(t, 5*time.Second), zaptest.NewLogger(t), prometheus.NewRegistry(),
		emit.Config{Batch: 1, Lease: 10 * time.Second, Poll: 10 * time.Millisecond, Settle: time.Millisecond,
			Retry: backoff.Policy{Base: time.Millisecond, Cap: time.Millisecond}, DGIPoll: backoff.Policy{Base: time.Millisecond, Cap: time.Millisecond},
			CreditNoteWait: time.Millisecond, RefusedCaseAfter: 5})
	note = k.until(t, note.Reference, final)
	c := k.theCase(t, cases.NeedsAttention)
	if code := k.call(t, http.MethodPost, "/admin/documents/"+strconv.FormatInt(note.ID, 10)+"/resolve",
		`{"action":"void","actor":"ana","reason":"refund reversed at the PSP"}`, nil); code != http.StatusOK {
		t.Fatalf("resolve the document: %d", code)
	}
	var got cases.View
	if code := k.call(t, http.MethodGet, "/admin/cases/"+c.ID, "", &got); code != http.StatusOK || got.ClosedAt == "" || got.Action != "void" || got.ClosedBy != "ana" {
		t.Fatalf("case after resolving its document: %d %+v, want closed by ana with void", code, got)
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func TestRefusedDocumentThatWentThroughIsNeverVoided(t *testing.T) {
	t.Parallel()
	k := newCaseKit(t)
	d := k.env.Record(t, invoicertest.Payment("pay-refused-healed", 500_00, false))
	k.env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{Refuse: true})
	k.until(t, d.Reference, func(d store.Document) bool { return d.Refusals >= 2 })
	c := k.theCase(t, cases.DocumentRefused)
	k.env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{}) // the fault heals; the backoff retries get it through
	if d = k.until(t, d.Reference, final); d.Status != fiscal.StatusAuthorized {
		t.Fatalf("document %s, want authorized once the provider takes it", d.Status)
	}
	if code := k.resolve(t, c.ID, `{"action":"void","actor":"ana","reason":"x"}`, nil); code != http.StatusConflict {
		t.Fatalf("void of an authorized document: %d, want 409", code)
	}
	var closed cases.View
	if code := k.resolve(t, c.ID, `{"action":"retry","actor":"ana","reason":"went through on its own"}`, &closed); code != http.StatusOK || closed.ClosedAt == "" {
		t.Fatalf("retry: %d %+v, want the case closed", code, closed)
	}
	if got := k.env.Document(t, d.Reference); got.Status != fiscal.StatusAuthorized {
		t.Fatalf("document %s after closing its case, want still authorized", got.Status)
	}
}
