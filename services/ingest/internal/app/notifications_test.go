package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/sqstest"
	"github.com/onceflow/onceflow/pkg/testwait"
)

// merchantSecret signs the deliveries to the test merchant (the Standard
// Webhooks specification's published test secret).
const merchantSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// merchant is a merchant's webhook endpoint: it verifies every delivery
// with the Standard Webhooks library and answers with the status its plan
// gives for the attempt (2xx from then on once the plan runs out).
type merchant struct {
	t    testing.TB
	srv  *httptest.Server
	mu   sync.Mutex
	plan []int                 // statuses to answer, in order; then 204
	seen map[string][]struct{} // event id → verified deliveries
	docs map[string]map[string]any
	bad  int // deliveries that failed verification
}

func newMerchant(t testing.TB, plan ...int) *merchant {
	m := &merchant{t: t, plan: plan, seen: map[string][]struct{}{}, docs: map[string]map[string]any{}}
	hook, err := standardwebhooks.NewWebhook(merchantSecret)
	if err != nil {
		t.Fatal(err)
	}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		defer m.mu.Unlock()
		if err := hook.Verify(body, r.Header); err != nil {
			m.bad++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		id := r.Header.Get(standardwebhooks.HeaderWebhookID)
		m.seen[id] = append(m.seen[id], struct{}{})
		var p struct {
			Type string
			Data struct {
				EventID         string `json:"event_id"`
				MerchantOrderID string `json:"merchant_order_id"`
				Document        map[string]any
			}
		}
		if err := json.Unmarshal(body, &p); err != nil || p.Type != "document.authorized" || p.Data.EventID != id {
			m.bad++
		}
		p.Data.Document["merchant_order_id"] = p.Data.MerchantOrderID
		m.docs[id] = p.Data.Document
		status := http.StatusNoContent
		if len(m.plan) > 0 {
			status, m.plan = m.plan[0], m.plan[1:]
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// deliveries returns how many verified deliveries of event id arrived.
func (m *merchant) deliveries(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.seen[id])
}

// succeed makes every later delivery answer 204.
func (m *merchant) succeed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.plan = nil
}

// startNotified runs ingest consuming a queue of its own and delivering to
// m; it returns the env and the queue's URL.
func startNotified(t *testing.T, m *merchant, extra ...string) (*env, *sqs.Client, string) {
	c := sqstest.Client(t)
	_, url := sqstest.Queue(t, c, "ingest-notify", 5)
	vars := append([]string{"AWS_ENDPOINT_URL_SQS", os.Getenv("AWS_ENDPOINT_URL_SQS"), "INGEST_CONSUME_NOTIFICATIONS", "true", "INGEST_NOTIFICATIONS_QUEUE", url,
		"INGEST_NOTIFICATIONS_WAIT", "1s", "INGEST_MERCHANT_WEBHOOK_URL", m.srv.URL, "INGEST_MERCHANT_WEBHOOK_SECRET", merchantSecret,
		"INGEST_MERCHANT_WEBHOOK_BACKOFF_BASE", "20ms", "INGEST_MERCHANT_WEBHOOK_BACKOFF_CAP", "100ms",
		"INGEST_MERCHANT_WEBHOOK_POLL_INTERVAL", "50ms"}, extra...)
	return start(t, vars...), c, url
}

// notification is the invoicer's announcement that document ref of payment
// is authorized (or, with status set otherwise, what it says).
func notification(ref, payment, status string, typ eventsv1.NotificationType, at time.Time) *eventsv1.NotificationEvent {
	key := "document:" + ref + ":" + status
	if typ == eventsv1.NotificationType_NOTIFICATION_TYPE_NEEDS_ATTENTION {
		key += ":1"
	}
	ev := &eventsv1.NotificationEvent{EventKey: key, Type: typ, SourceKind: "payment", SourceRef: payment, PaymentRef: payment,
		Reference: ref, CfeType: 101, Kind: eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE, Status: status,
		AmountMinor: 122050, Currency: "UYU", OccurredAt: timestamppb.New(at)}
	if typ == eventsv1.NotificationType_NOTIFICATION_TYPE_AUTHORIZED {
		ev.Series, ev.Number, ev.CaeId, ev.CaeRangeFrom, ev.CaeRangeTo, ev.CaeExpires = "A", 7, "90101", 1, 1000000, "2028-12-01"
		ev.SecurityCode, ev.IssueDate = "Ab3dE9", "2026-12-01"
		ev.VerifyUrl = "https://fiscal.sandbox.invalid/consultaQR/cfe?2001,101,A,7,1220.50,01/12/2026,Ab3dE9"
	}
	return ev
}

// send puts ev on the queue as the relay would, signed with relayKey.
func send(t testing.TB, c *sqs.Client, url string, ev *eventsv1.NotificationEvent) {
	t.Helper()
	sendSigned(t, c, url, ev, relayKey)
}

// sendSigned puts ev on the queue with the relay's attributes, signed with
// key (id:secret) unless key is empty.
func sendSigned(t testing.TB, c *sqs.Client, url string, ev *eventsv1.NotificationEvent, key string) {
	t.Helper()
	body, err := eventsv1.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	attrs := outbox.Attributes("notification.document", ev.GetEventKey(), "")
	if key != "" {
		k, err := msgauth.ParseKey(key)
		if err != nil {
			t.Fatal(err)
		}
		attrs = k.Sign(string(body), attrs)
	}
	if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(string(body)),
		MessageAttributes: attrs}); err != nil {
		t.Fatal(err)
	}
}

// orderView is GET /v1/orders/{id}'s answer, as far as these tests read it.
type orderView struct {
	MerchantOrderID string `json:"merchant_order_id"`
	PSPPaymentID    string `json:"psp_payment_id"`
	Invoice         *struct {
		Status, Series, Reference string
		Number                    int64
		SecurityCode              string `json:"security_code"`
		VerifyURL                 string `json:"verify_url"`
		CAE                       *struct {
			ID        string `json:"id"`
			RangeFrom int64  `json:"range_from"`
			RangeTo   int64  `json:"range_to"`
			Expires   string `json:"expires"`
		} `json:"cae"`
	} `json:"invoice"`
	CreditNotes []any `json:"credit_notes"`
}

func (e *env) orderView(id string) orderView {
	e.t.Helper()
	code, body := e.get(e.ingest+"/v1/orders/"+id, http.Header{"Authorization": {"Bearer " + token}})
	if code != http.StatusOK {
		e.t.Fatalf("GET order: %d %s", code, body)
	}
	var v orderView
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		e.t.Fatal(err)
	}
	return v
}

// TestAuthorizedInvoiceReachesTheOrderAndTheMerchant: the invoicer's
// notifications about a payment's invoice are recorded from the queue and
// shown on GET /v1/orders/{id} with the CAE and verification link; the
// merchant receives the authorized one, signed (verified with the Standard
// Webhooks library), retried after a failure, once per event id despite the
// event arriving twice, and never the needs_attention one.
func TestAuthorizedInvoiceReachesTheOrderAndTheMerchant(t *testing.T) {
	t.Parallel()
	m := newMerchant(t, http.StatusInternalServerError) // the first delivery fails
	e, c, url := startNotified(t, m)
	e.order("o-notify", 122050)
	payment := e.pay("o-notify", "1220.50")
	e.waitCount(1, "SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", payment)
	orderID := e.orderID("o-notify")

	now := time.Now()
	attention := notification("4242", payment, "needs_attention", eventsv1.NotificationType_NOTIFICATION_TYPE_NEEDS_ATTENTION, now.Add(-time.Second))
	send(t, c, url, attention)
	testwait.Until(t, 20*time.Second, 20*time.Millisecond, "the needs_attention document on the order", func() bool {
		v := e.orderView(orderID)
		return v.Invoice != nil && v.Invoice.Status == "needs_attention"
	})
	authorized := notification("4242", payment, "authorized", eventsv1.NotificationType_NOTIFICATION_TYPE_AUTHORIZED, now)
	send(t, c, url, authorized)
	send(t, c, url, authorized) // a redelivery
	testwait.Until(t, 20*time.Second, 20*time.Millisecond, "the merchant's 2xx for the authorized invoice", func() bool {
		return m.deliveries(authorized.EventKey) == 2 // one 500, then one 204
	})

	e.waitCount(1, "SELECT count(*) FROM ingest.notification_deliveries WHERE event_id = $1 AND status = 'delivered'", authorized.EventKey)
	v := e.orderView(orderID)
	inv := v.Invoice
	if inv == nil || inv.Status != "authorized" || inv.Series != "A" || inv.Number != 7 || inv.SecurityCode != "Ab3dE9" ||
		inv.VerifyURL != authorized.VerifyUrl || inv.CAE == nil || inv.CAE.ID != "90101" || inv.CAE.RangeFrom != 1 ||
		inv.CAE.RangeTo != 1000000 || inv.CAE.Expires != "2028-12-01" || len(v.CreditNotes) != 0 {
		t.Fatalf("GET order shows %+v (invoice %+v), want the authorized invoice with its CAE and verification URL", v, inv)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bad != 0 || len(m.seen) != 1 || m.docs[authorized.EventKey]["verify_url"] != authorized.VerifyUrl ||
		m.docs[authorized.EventKey]["merchant_order_id"] != "o-notify" {
		t.Fatalf("merchant saw %d unverifiable deliveries and events %v (%v), want only %s with the order and verification URL",
			m.bad, m.seen, m.docs, authorized.EventKey)
	}
	var attempts []int
	rows, err := e.pool.Query(context.Background(), `SELECT a.http_status FROM ingest.notification_attempts a
JOIN ingest.notification_deliveries d ON d.id = a.delivery_id WHERE d.event_id = $1 AND d.status = 'delivered' ORDER BY a.id`, authorized.EventKey)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s int
		_ = rows.Scan(&s)
		attempts = append(attempts, s)
	}
	if len(attempts) != 2 || attempts[0] != 500 || attempts[1] != 204 {
		t.Fatalf("delivery log %v, want [500 204]", attempts)
	}
}

// TestFailingDeliveryIsParkedAndReplayed: a merchant that keeps failing
// gets the configured number of attempts, then the delivery is parked; an
// operator's replay sends it again under the same event id; 410 Gone parks
// at once.
func TestFailingDeliveryIsParkedAndReplayed(t *testing.T) {
	t.Parallel()
	m := newMerchant(t, 503, 503, 503, http.StatusGone)
	e, c, url := startNotified(t, m, "INGEST_MERCHANT_WEBHOOK_MAX_ATTEMPTS", "3")
	e.order("o-park", 122050)
	payment := e.pay("o-park", "1220.50")
	e.waitCount(1, "SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", payment)

	ev := notification("5151", payment, "authorized", eventsv1.NotificationType_NOTIFICATION_TYPE_AUTHORIZED, time.Now())
	send(t, c, url, ev)
	e.waitCount(1, "SELECT count(*) FROM ingest.notification_deliveries WHERE event_id = $1 AND status = 'parked' AND attempts = 3", ev.EventKey)
	if n := m.deliveries(ev.EventKey); n != 3 {
		t.Fatalf("merchant got %d deliveries before parking, want 3", n)
	}
	admin := http.Header{"Authorization": {"Bearer " + adminToken}}
	code, body := e.get(e.admin+"/admin/notifications?status=parked", admin)
	var list struct {
		Notifications []struct {
			ID      int64  `json:"id"`
			EventID string `json:"event_id"`
		}
	}
	if err := json.Unmarshal([]byte(body), &list); code != http.StatusOK || err != nil || len(list.Notifications) != 1 || list.Notifications[0].EventID != ev.EventKey {
		t.Fatalf("parked notifications: %d %s", code, body)
	}
	id := strconv.FormatInt(list.Notifications[0].ID, 10)
	if code, body := e.post(e.admin+"/admin/notifications/"+id+"/replay", map[string]string{}, admin); code != http.StatusBadRequest {
		t.Fatalf("replay without actor: %d %s, want 400", code, body)
	}

	// Replayed, it meets 410 Gone: parked at once, after one attempt.
	if code, body := e.post(e.admin+"/admin/notifications/"+id+"/replay", map[string]string{"actor": "ops", "reason": "endpoint fixed"}, admin); code != http.StatusOK {
		t.Fatalf("replay: %d %s", code, body)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.notification_deliveries WHERE event_id = $1 AND status = 'parked' AND attempts = 1", ev.EventKey)

	m.succeed()
	if code, body := e.post(e.admin+"/admin/notifications/"+id+"/replay", map[string]string{"actor": "ops", "reason": "endpoint back"}, admin); code != http.StatusOK {
		t.Fatalf("replay: %d %s", code, body)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.notification_deliveries WHERE event_id = $1 AND status = 'delivered' AND replayed_by = 'ops'", ev.EventKey)
	if n := m.deliveries(ev.EventKey); n != 5 {
		t.Fatalf("merchant got %d deliveries of %s, want 5 (3 failed, 410, then the 2xx)", n, ev.EventKey)
	}
	code, body = e.get(e.admin+"/admin/notifications/"+id, admin)
	var one struct {
		Attempts []struct {
			HTTPStatus int `json:"http_status"`
		}
	}
	if err := json.Unmarshal([]byte(body), &one); code != http.StatusOK || err != nil || len(one.Attempts) != 5 || one.Attempts[4].HTTPStatus != 204 {
		t.Fatalf("notification with its attempt log: %d %s", code, body)
	}
	if code, _ := e.post(e.admin+"/admin/notifications/"+id+"/replay", map[string]string{"actor": "ops", "reason": "again"}, admin); code != http.StatusOK {
		t.Fatalf("replay of a delivered notification: %d, want 200", code)
	}
	if code, _ := e.post(e.admin+"/admin/notifications/999999/replay", map[string]string{"actor": "ops", "reason": "x"}, admin); code != http.StatusNotFound {
		t.Fatalf("replay of an unknown notification: %d, want 404", code)
	}
}
