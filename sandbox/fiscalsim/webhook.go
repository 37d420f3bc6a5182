package fiscalsim

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/onceflow/onceflow/pkg/httpclient"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.uber.org/zap"
)

// Webhook configures the provider webhooks the simulator sends when a
// document's status changes (issued, or authorized after pending polls).
// The body is documented in docs/wire-invoicy.md.
type Webhook struct {
	// URL receives the POSTs; empty sends none.
	URL string
	// Secret is the Standard Webhooks signing secret, "whsec_" + base64.
	Secret string
}

// webhookAttempts bounds deliveries of one event; the simulator does not
// persist undelivered events.
const webhookAttempts = 3

// CheckWebhook reports whether w can sign: an empty URL is valid (no
// webhooks), otherwise Secret must be a whsec_ secret.
func CheckWebhook(w Webhook) error {
	if w.URL == "" {
		return nil
	}
	if _, err := standardwebhooks.NewWebhook(w.Secret); err != nil {
		return fmt.Errorf("webhook secret: want whsec_ followed by base64: %w", err)
	}
	return nil
}

// notifier sends signed status-change events; a nil notifier sends nothing.
type notifier struct {
	url    string
	signer *standardwebhooks.Webhook
	hc     *http.Client
	log    *zap.Logger
}

// newNotifier returns nil when cfg has no URL or (logged) a bad secret.
func newNotifier(cfg Webhook, log *zap.Logger) *notifier {
	if cfg.URL == "" {
		return nil
	}
	signer, err := standardwebhooks.NewWebhook(cfg.Secret)
	if err != nil {
		log.Error("webhooks disabled: bad secret", zap.Error(err))
		return nil
	}
	return &notifier{url: cfg.URL, signer: signer, hc: httpclient.New(5 * time.Second), log: log}
}

// event is the body of a provider webhook.
type event struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt string    `json:"created_at"`
	Data      eventData `json:"data"`
}

type eventData struct {
	Reference string `json:"reference"`
	Status    string `json:"status"`
}

// statusChanged announces d's current status in the background.
func (n *notifier) statusChanged(d Document) {
	if n == nil {
		return
	}
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	ev := event{ID: "evt_" + hex.EncodeToString(id), Type: "document.status_changed",
		CreatedAt: time.Now().UTC().Format(time.RFC3339),
		Data:      eventData{Reference: d.Reference, Status: strconv.Itoa(d.Status)}}
	go n.deliver(ev)
}

// deliver POSTs ev until a 2xx answer, at most webhookAttempts times.
func (n *notifier) deliver(ev event) {
	body, err := json.Marshal(ev)
	if err != nil {
		n.log.Error("encode webhook", zap.Error(err))
		return
	}
	for attempt := 1; attempt <= webhookAttempts; attempt++ {
		if attempt > 1 {
			time.Sleep(time.Duration(attempt-1) * 200 * time.Millisecond)
		}
		if err = n.post(ev.ID, body); err == nil {
			n.log.Info("webhook delivered", zap.String("event_id", ev.ID), zap.String("reference", ev.Data.Reference))
			return
		}
	}
	n.log.Warn("webhook not delivered", zap.String("event_id", ev.ID), zap.Error(err))
}

func (n *notifier) post(id string, body []byte) error {
	now := time.Now()
	sig, err := n.signer.Sign(id, now, body)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(standardwebhooks.HeaderWebhookID, id)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := n.hc.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}
