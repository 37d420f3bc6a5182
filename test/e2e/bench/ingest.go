package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/pkg/deflated"
)

// The webhook source the load goes to: Stripe's scheme (HMAC-SHA256 over
// "<t>.<body>", the same work as every other scheme) and kind generic, so
// the apply worker only marks each receipt done. A psp source would make
// it re-fetch a payment the PSP sandbox never made, retrying for minutes,
// and measure the sandbox instead of ingest.
const (
	benchSource = "bench"
	benchSecret = "whsec_onceflow_bench"
	eventType   = "charge.succeeded"
)

// sourcesFile is ingest's INGEST_WEBHOOK_SOURCES_FILE for the run: dLocal
// for the pipeline's payments and the bench source for the load.
const sourcesFile = `sources:
  - name: dlocal
    kind: psp
    scheme: dlocal
    login: env:DLOCAL_LOGIN
    secrets: [env:DLOCAL_SECRET_KEY]
  - name: ` + benchSource + `
    kind: generic
    scheme: stripe
    secrets: [` + benchSecret + `]
`

// writeSources writes the sources file into dir and returns its path; the
// stack writes its own, without the bench source, as sources.yaml.
func writeSources(dir string) (string, error) {
	path := filepath.Join(dir, "bench-sources.yaml") // the stack writes its own sources.yaml there
	if err := os.WriteFile(path, []byte(sourcesFile), 0o644); err != nil {
		return "", fmt.Errorf("write sources file: %w", err)
	}
	return path, nil
}

// events mints event ids unique to the run and the Stripe-shaped bodies
// that carry them (about 500 bytes, like a charge event).
type events struct {
	prefix string
	seq    atomic.Int64
}

func (e *events) next() (id string, body []byte) {
	id = e.prefix + strconv.FormatInt(e.seq.Add(1), 10)
	body = fmt.Appendf(nil, `{"id":%q,"object":"event","api_version":"2024-06-20","created":%d,"livemode":false,`+
		`"type":%q,"data":{"object":{"id":"ch_%s","object":"charge","amount":125000,"currency":"uyu",`+
		`"status":"succeeded","paid":true,"captured":true,"description":"onceflow benchmark charge",`+
		`"metadata":{"merchant_order_id":"bench-%s"},"payment_method_details":{"type":"card","card":`+
		`{"brand":"visa","last4":"4242","exp_month":12,"exp_year":2030}}}},"pending_webhooks":1,`+
		`"request":{"id":null,"idempotency_key":null}}`, id, time.Now().Unix(), eventType, id, id)
	return id, body
}

// webhookOp delivers a new, validly signed event to url per call; any
// answer but 200 is an error.
// A 503 (ingest shedding load, busy) is counted in shed, when it is not
// nil, instead of stopping the stage: at a fixed offered rate it is what
// ingest does past its bound, which the stage reports.
func webhookOp(client *http.Client, url string, ev *events, shed *atomic.Int64) Op {
	return func(ctx context.Context) error {
		_, body := ev.next()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Stripe-Signature", "t="+ts+",v1="+signStripe(benchSecret, ts, body))
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("webhook: %w", err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable && shed != nil {
			shed.Add(1)
			return nil
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("webhook: %d %s", resp.StatusCode, answer)
		}
		return nil
	}
}

// signStripe is Stripe's v1 signature: hex HMAC-SHA256 of "<t>.<body>".
func signStripe(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// receiptOp runs the statement ingest runs for a new event (see
// ReceiptStatement) straight through pgx, as ingest's handler does: one
// statement, auto-committed, prepared and cached per connection.
func receiptOp(pool *pgxpool.Pool, stmt Statement, ev *events) (Op, error) {
	if _, err := stmt.Args(receiptParams("", nil)); err != nil {
		return nil, fmt.Errorf("ingest's receipt query: %w", err)
	}
	return func(ctx context.Context) error {
		id, body := ev.next()
		args, _ := stmt.Args(receiptParams(id, body))
		if _, err := pool.Exec(ctx, stmt.SQL, args...); err != nil {
			return fmt.Errorf("insert receipt: %w", err)
		}
		return nil
	}, nil
}

// ceilingLease is the lease token of the ceiling's receipts.
const ceilingLease = "6f1c2a0e-5b8d-4c3e-9a7f-0d2b4e6a8c10"

// receiptParams are the values ingest binds for a bench-source event
// inserted alone (arrays of one): the body as ingest stores it (deflated
// when shorter), and a fresh W3C
// traceparent as ingest starts one for a delivery that carries none.
func receiptParams(id string, body []byte) map[string]any {
	stored, isDeflated := deflated.Pack(body)
	return map[string]any{
		"sources": []string{benchSource}, "scopes": []string{benchSource}, "kinds": []string{"generic"},
		"dedupe_keys": []string{"event:" + id}, "event_ids": []string{id}, "event_types": []string{eventType},
		"bodies": [][]byte{stored}, "bodies_deflated": []bool{isDeflated},
		"traceparents": []string{fmt.Sprintf("00-%016x%016x-%016x-01", rand.Uint64(), rand.Uint64(), rand.Uint64())},
		// Claimed under a lease, as ingest inserts a receipt its handoff has
		// room for (store.Handoff).
		"lease_token": ceilingLease, "lease_seconds": 60.0,
	}
}
