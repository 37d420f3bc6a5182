package webhooksig

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Standard verifies Standard Webhooks deliveries (webhook-id,
// webhook-timestamp, webhook-signature with space-separated "v1,<base64>"
// entries) with the specification's own Go library. Secrets are the
// base64 "whsec_…" strings the sender shows.
type Standard struct {
	hooks     []*standardwebhooks.Webhook
	tolerance time.Duration
}

// NewStandard returns a verifier for the secrets, refusing timestamps more
// than tolerance old or ahead.
func NewStandard(secrets []string, tolerance time.Duration) (*Standard, error) {
	s := &Standard{tolerance: tolerance}
	for i, secret := range secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return nil, fmt.Errorf("secret %d is not a base64 whsec_ secret", i+1)
		}
		s.hooks = append(s.hooks, wh)
	}
	return s, nil
}

// Verify implements Verifier.
func (s *Standard) Verify(h http.Header, body []byte, now time.Time) error {
	id, ts, sig := h.Get(standardwebhooks.HeaderWebhookID), h.Get(standardwebhooks.HeaderWebhookTimestamp), h.Get(standardwebhooks.HeaderWebhookSignature)
	if id == "" || ts == "" || sig == "" {
		return refuse(Missing, "want webhook-id, webhook-timestamp and webhook-signature headers")
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return refuse(Malformed, "webhook-timestamp is not unix seconds")
	}
	for _, wh := range s.hooks {
		err := wh.VerifyIgnoringTimestamp(body, h)
		if err == nil {
			return checkTime(time.Unix(unix, 0), now, s.tolerance)
		}
		if !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
			return refuse(Malformed, "webhook-signature cannot be parsed")
		}
	}
	return refuse(Mismatch, "no webhook-signature entry matches")
}
