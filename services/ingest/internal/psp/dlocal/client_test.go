package dlocal

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dlocalsig "github.com/onceflow/onceflow/pkg/dlocal"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/sandbox/pspsim"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
)

func TestStatusCodeIsAStringOrANumber(t *testing.T) {
	for in, want := range map[string]code{`{"status_code":"200"}`: "200", `{"status_code":200}`: "200", `{"status_code":null}`: "", `{}`: ""} {
		var w wire
		if err := json.Unmarshal([]byte(in), &w); err != nil || w.StatusCode != want {
			t.Errorf("%s: got %q (%v), want %q", in, w.StatusCode, err, want)
		}
	}
	var w wire
	if err := json.Unmarshal([]byte(`{"status_code":true}`), &w); err == nil {
		t.Error("a boolean status_code was accepted")
	}
}

func TestDatesInEveryShapeDLocalWrites(t *testing.T) {
	want := time.Date(2019, 6, 26, 15, 17, 31, 0, time.UTC)
	for _, in := range []string{"2019-06-26T15:17:31.000+0000", "2019-06-26T15:17:31-00:00", "2019-06-26T15:17:31Z", "2019-06-26T12:17:31.000-0300"} {
		if got, err := parseDate(in); err != nil || !got.Equal(want) {
			t.Errorf("%s: got %v (%v), want %v", in, got, err, want)
		}
	}
	if _, err := parseDate("26/06/2019"); err == nil {
		t.Error("a date in no dLocal shape was accepted")
	}
}

// A PAID payment whose code says otherwise is not trusted: it is fetched
// again later instead of being invoiced.
func TestSuccessContradictedByItsCodeIsNotTrusted(t *testing.T) {
	w := wire{ID: "D-1", Status: "PAID", StatusCode: "100", Amount: "10.00"}
	_, _, err := w.decode()
	if err == nil || errkind.Of(err) != errkind.Unavailable {
		t.Fatalf("decode = %v, want an Unavailable error", err)
	}
	w.StatusCode = "200"
	if minor, _, err := w.decode(); err != nil || minor != 1000 {
		t.Fatalf("decode = %d, %v", minor, err)
	}
}

// Against the PSP sandbox: a payment's string code and a refund's number
// code, the decimal amounts and the creation dates.
func TestFetchesFromTheSandbox(t *testing.T) {
	sb := pspsim.New(pspsim.Config{Login: "l", TransKey: "t", SecretKey: "s"})
	srv := httptest.NewServer(sb)
	defer srv.Close()
	defer sb.Close()
	c := New(Config{BaseURL: srv.URL, Login: "l", TransKey: "t", SecretKey: "s"}, http.DefaultClient)
	pay := create(t, srv.URL, "/payments", `{"amount":1220.50,"currency":"UYU","country":"UY","payment_method_id":"CARD","order_id":"o-1"}`)
	p, err := c.Payment(context.Background(), pay)
	if err != nil || p.Status != "PAID" || p.StatusCode != "200" || p.AmountMinor != 122050 || p.Created.IsZero() {
		t.Fatalf("payment = %+v (%v)", p, err)
	}
	ref := create(t, srv.URL, "/refunds", `{"payment_id":"`+pay+`","amount":20.25,"currency":"UYU"}`)
	r, err := c.Refund(context.Background(), ref)
	if err != nil || r.Status != "SUCCESS" || r.StatusCode != "200" || r.AmountMinor != 2025 || r.PaymentID != pay {
		t.Fatalf("refund = %+v (%v)", r, err)
	}
}

func create(t *testing.T, base, path, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	date := dlocalsig.FormatDate(time.Now())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(dlocalsig.HeaderDate, date)
	req.Header.Set(dlocalsig.HeaderLogin, "l")
	req.Header.Set(dlocalsig.HeaderTransKey, "t")
	req.Header.Set(dlocalsig.HeaderAuthorization, dlocalsig.Authorization(dlocalsig.Sign("s", "l", date, []byte(body))))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ ID json.RawMessage } // a string, or a number (a plan)
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.ID) == 0 || resp.StatusCode != http.StatusOK {
		t.Fatalf("create %s: %d %v", path, resp.StatusCode, err)
	}
	return strings.Trim(string(out.ID), `"`)
}

// Against the sandbox: an order's payments are found by its reference, and
// a period's are listed across pages, oldest first.
func TestFindsAndListsPaymentsAtTheSandbox(t *testing.T) {
	sb := pspsim.New(pspsim.Config{Login: "l", TransKey: "t", SecretKey: "s"})
	srv := httptest.NewServer(sb)
	defer srv.Close()
	defer sb.Close()
	c := New(Config{BaseURL: srv.URL, Login: "l", TransKey: "t", SecretKey: "s"}, http.DefaultClient)
	before := time.Now().Add(-time.Second)
	first := create(t, srv.URL, "/payments", `{"amount":10,"currency":"UYU","country":"UY","payment_method_id":"CARD","order_id":"o-1"}`)
	second := create(t, srv.URL, "/payments", `{"amount":10,"currency":"UYU","country":"UY","payment_method_id":"CARD","order_id":"o-1","description":"100"}`)
	for range pageSizeForTest {
		create(t, srv.URL, "/payments", `{"amount":1,"currency":"UYU","country":"UY","payment_method_id":"CARD","order_id":"o-2"}`)
	}
	found, err := c.PaymentsOfOrder(context.Background(), "o-1")
	if err != nil || len(found) != 2 || found[0].ID != first || found[1].ID != second ||
		found[0].Status != "PAID" || found[1].Status != "PENDING" || found[0].AmountMinor != 1000 || found[0].OrderID != "o-1" {
		t.Fatalf("PaymentsOfOrder = %+v (%v), want %s PAID then %s PENDING", found, err, first, second)
	}
	if none, err := c.PaymentsOfOrder(context.Background(), "o-none"); err != nil || len(none) != 0 {
		t.Fatalf("PaymentsOfOrder of an unknown order = %+v (%v), want none", none, err)
	}
	all, err := c.PaymentsCreated(context.Background(), before, time.Now().Add(time.Second))
	if err != nil || len(all) != pageSizeForTest+2 || all[0].ID != first {
		t.Fatalf("PaymentsCreated = %d payments (%v), want %d across two pages, %s first", len(all), err, pageSizeForTest+2, first)
	}
	if later, err := c.PaymentsCreated(context.Background(), time.Now().Add(time.Second), time.Now().Add(time.Hour)); err != nil || len(later) != 0 {
		t.Fatalf("PaymentsCreated of a later period = %d (%v), want none", len(later), err)
	}
	ref := create(t, srv.URL, "/refunds", `{"payment_id":"`+first+`","amount":4.00,"currency":"UYU"}`)
	refunds, err := c.RefundsCreated(context.Background(), before, time.Now().Add(time.Second))
	if err != nil || len(refunds) != 1 || refunds[0].ID != ref || refunds[0].PaymentID != first || refunds[0].AmountMinor != 400 || refunds[0].Status != "SUCCESS" {
		t.Fatalf("RefundsCreated = %+v (%v), want refund %s of 400", refunds, err, ref)
	}
}

// pageSizeForTest is the sandbox's page size: that many payments more than
// two make the listing take a second page.
const pageSizeForTest = 100

// Against the sandbox: a subscription's execution is fetched by the
// payment id ingest records it under, as a PAID payment of the order the
// buyer subscribed with; an id of no execution is NotFound.
func TestFetchesASubscriptionExecution(t *testing.T) {
	sb := pspsim.New(pspsim.Config{Login: "l", TransKey: "t", SecretKey: "s"})
	srv := httptest.NewServer(sb)
	defer srv.Close()
	defer sb.Close()
	c := New(Config{BaseURL: srv.URL, Login: "l", TransKey: "t", SecretKey: "s"}, http.DefaultClient)
	sub := subscribe(t, srv.URL, "o-sub")
	var ex struct{ ID string }
	sandboxPost(t, srv.URL, "/sandbox/subscriptions/"+sub+"/execute", "", &ex)
	id, ok := ExecutionPaymentID(sub, ex.ID)
	if !ok {
		t.Fatalf("no payment id for execution %s of %s", ex.ID, sub)
	}
	p, err := c.Payment(context.Background(), id)
	if err != nil || p.ID != id || p.Status != psp.StatusPaid || p.StatusCode != "COMPLETED" || p.AmountMinor != 49000 ||
		p.Currency != "UYU" || p.OrderID != "o-sub" || p.Created.IsZero() {
		t.Fatalf("execution as a payment: %+v (%v)", p, err)
	}
	missing, _ := ExecutionPaymentID(sub, "ST-none")
	if _, err := c.Payment(context.Background(), missing); errkind.Of(err) != errkind.NotFound {
		t.Fatalf("an unknown execution: %v, want NotFound", err)
	}
}

// Against the sandbox: the executions of the subscriptions among the known
// payment ids of an order are listed across pages, oldest first, as the
// payments ingest records them under, silent ones included; ordinary
// payment ids and other subscriptions are left out, and a subscription
// dLocal does not hold is NotFound.
func TestListsTheExecutionsOfKnownSubscriptions(t *testing.T) {
	sb := pspsim.New(pspsim.Config{Login: "l", TransKey: "t", SecretKey: "s"})
	srv := httptest.NewServer(sb)
	defer srv.Close()
	defer sb.Close()
	c := New(Config{BaseURL: srv.URL, Login: "l", TransKey: "t", SecretKey: "s"}, http.DefaultClient)
	sub, other := subscribe(t, srv.URL, "o-sub"), subscribe(t, srv.URL, "o-other")
	sandboxPost(t, srv.URL, "/sandbox/subscriptions/"+other+"/execute", "", &struct{}{})
	var ids []string
	for i := range pageSizeForTest + 1 {
		body := `{"silent":true}` // every notification lost but the first's
		if i == 0 {
			body = ""
		}
		var ex struct{ ID string }
		sandboxPost(t, srv.URL, "/sandbox/subscriptions/"+sub+"/execute", body, &ex)
		id, _ := ExecutionPaymentID(sub, ex.ID)
		ids = append(ids, id)
	}
	got, err := c.PaymentsOfSubscriptions(context.Background(), psp.Subscriptions{OrderRef: "o-sub", Known: []string{"D-ordinary", ids[0]}})
	if err != nil || len(got) != len(ids) {
		t.Fatalf("PaymentsOfSubscriptions = %d payments (%v), want %d across two pages", len(got), err, len(ids))
	}
	for i, p := range got {
		if p.ID != ids[i] || p.Status != psp.StatusPaid || p.AmountMinor != 49000 || p.OrderID != "o-sub" {
			t.Fatalf("execution %d = %+v, want %s PAID of 49000 on o-sub", i, p, ids[i])
		}
	}
	if none, err := c.PaymentsOfSubscriptions(context.Background(), psp.Subscriptions{OrderRef: "o-sub", Known: []string{"D-ordinary"}}); err != nil || len(none) != 0 {
		t.Fatalf("PaymentsOfSubscriptions of no execution = %+v (%v), want none and no call", none, err)
	}
	unknown, _ := ExecutionPaymentID("999", "ST-999-0")
	if _, err := c.PaymentsOfSubscriptions(context.Background(), psp.Subscriptions{OrderRef: "o-sub", Known: []string{unknown}}); errkind.Of(err) != errkind.NotFound {
		t.Fatalf("a subscription dLocal does not hold: %v, want NotFound", err)
	}
}

// Against the sandbox: with the plan named, an order's subscription none of
// whose executions is known is found among the plan's by the order
// reference, and its silent first execution listed; the plan's other
// subscribers are left out, and a subscription both named and known is
// listed once. An unknown plan is NotFound.
func TestListsTheExecutionsOfAPlanSubscriptionByOrder(t *testing.T) {
	sb := pspsim.New(pspsim.Config{Login: "l", TransKey: "t", SecretKey: "s"})
	srv := httptest.NewServer(sb)
	defer srv.Close()
	defer sb.Close()
	c := New(Config{BaseURL: srv.URL, Login: "l", TransKey: "t", SecretKey: "s"}, http.DefaultClient)
	plan := newPlan(t, srv.URL)
	other, mine := subscribeTo(t, srv.URL, plan, "o-other"), subscribeTo(t, srv.URL, plan, "o-sub")
	sandboxPost(t, srv.URL, "/sandbox/subscriptions/"+other+"/execute", `{"silent":true}`, &struct{}{})
	var ex struct{ ID string }
	sandboxPost(t, srv.URL, "/sandbox/subscriptions/"+mine+"/execute", `{"silent":true}`, &ex)
	first, _ := ExecutionPaymentID(mine, ex.ID)
	for _, known := range [][]string{nil, {first}} {
		got, err := c.PaymentsOfSubscriptions(context.Background(), psp.Subscriptions{OrderRef: "o-sub", Plan: plan, Known: known})
		if err != nil || len(got) != 1 || got[0].ID != first || got[0].Status != psp.StatusPaid || got[0].OrderID != "o-sub" {
			t.Fatalf("PaymentsOfSubscriptions of plan %s knowing %v = %+v (%v), want only %s PAID", plan, known, got, err, first)
		}
	}
	if _, err := c.PaymentsOfSubscriptions(context.Background(), psp.Subscriptions{OrderRef: "o-sub", Plan: "999"}); errkind.Of(err) != errkind.NotFound {
		t.Fatalf("a plan dLocal does not hold: %v, want NotFound", err)
	}
}

// Against the sandbox: a period's listing holds the executions of every
// subscription of every plan created in it, silent ones included, beside
// the ordinary payments, and none of a later period.
func TestListsAPeriodsExecutions(t *testing.T) {
	sb := pspsim.New(pspsim.Config{Login: "l", TransKey: "t", SecretKey: "s"})
	srv := httptest.NewServer(sb)
	defer srv.Close()
	defer sb.Close()
	c := New(Config{BaseURL: srv.URL, Login: "l", TransKey: "t", SecretKey: "s"}, http.DefaultClient)
	before := time.Now().Add(-time.Second)
	pay := create(t, srv.URL, "/payments", `{"amount":10,"currency":"UYU","country":"UY","payment_method_id":"CARD","order_id":"o-1"}`)
	want := map[string]string{pay: "o-1"}
	for i, order := range []string{"o-sub", "o-other"} {
		sub := subscribeTo(t, srv.URL, newPlan(t, srv.URL), order)
		for range i + 1 {
			var ex struct{ ID string }
			sandboxPost(t, srv.URL, "/sandbox/subscriptions/"+sub+"/execute", `{"silent":true}`, &ex)
			id, _ := ExecutionPaymentID(sub, ex.ID)
			want[id] = order
		}
	}
	got, err := c.PaymentsCreated(context.Background(), before, time.Now().Add(time.Second))
	if err != nil || len(got) != len(want) {
		t.Fatalf("PaymentsCreated = %+v (%v), want %d payments", got, err, len(want))
	}
	for _, p := range got {
		if want[p.ID] != p.OrderID || p.Status != psp.StatusPaid {
			t.Fatalf("listed %+v, want one of %v, PAID", p, want)
		}
	}
	if later, err := c.PaymentsCreated(context.Background(), time.Now().Add(time.Second), time.Now().Add(time.Hour)); err != nil || len(later) != 0 {
		t.Fatalf("PaymentsCreated of a later period = %+v (%v), want none", later, err)
	}
}

// subscribe creates a plan of 490.00 UYU at the sandbox and subscribes
// order to it; it returns the subscription id.
func subscribe(t *testing.T, base, order string) string {
	t.Helper()
	return subscribeTo(t, base, newPlan(t, base), order)
}

// newPlan creates a monthly plan of 490.00 UYU at the sandbox and returns
// its id.
func newPlan(t *testing.T, base string) string {
	t.Helper()
	return create(t, base, "/v1/subscription/plan", `{"amount":490.00,"currency":"UYU","frequency_type":"MONTHLY"}`)
}

// subscribeTo subscribes order to plan at the sandbox and returns the
// subscription id.
func subscribeTo(t *testing.T, base, plan, order string) string {
	t.Helper()
	var sub struct{ ID json.Number }
	sandboxPost(t, base, "/sandbox/subscriptions", `{"plan_id":`+plan+`,"external_id":"`+order+`"}`, &sub)
	return sub.ID.String()
}

// sandboxPost posts body to one of the sandbox's own routes and decodes
// its answer into out.
func sandboxPost(t *testing.T, base, path, body string, out any) {
	t.Helper()
	resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %v", path, resp.StatusCode, err)
	}
}

// A listing that pages with total_pages and no has_more (as some
// subscription listings are seen) is read to its last page.
func TestReadsEveryPageOfATotalPagesListing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page := r.URL.Query().Get("page")
		_, _ = w.Write([]byte(`{"data":[{"id":` + page + `,"external_id":"o-` + page + `"}],"page":` + page + `,"total_pages":3}`))
	}))
	defer srv.Close()
	c := New(Config{BaseURL: srv.URL, Login: "l", TransKey: "t", SecretKey: "s"}, http.DefaultClient)
	var seen []string
	err := c.eachSubscription(context.Background(), "7", func(s idWire) error {
		seen = append(seen, string(s.ID)+":"+s.ExternalID)
		return nil
	})
	if err != nil || strings.Join(seen, ",") != "1:o-1,2:o-2,3:o-3" {
		t.Fatalf("read %v (%v), want the subscriptions of pages 1 to 3", seen, err)
	}
}
