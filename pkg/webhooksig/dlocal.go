package webhooksig

import (
	"errors"
	"net/http"
	"time"

	"github.com/onceflow/onceflow/pkg/dlocal"
)

// DLocal verifies dLocal notifications: V2-HMAC-SHA256 keyed with the
// merchant's secret key over its login, the X-Date header and the body.
// dLocal documents no timestamp rule for notifications, so Tolerance is
// usually zero (off): a replayed notification is harmless because the
// payment is re-fetched from dLocal before anything is applied.
type DLocal struct {
	Login     string
	Secrets   []string
	Tolerance time.Duration
}

// Verify implements Verifier.
func (d DLocal) Verify(h http.Header, body []byte, now time.Time) error {
	date := h.Get(dlocal.HeaderDate)
	if date == "" || h.Get(dlocal.HeaderAuthorization) == "" {
		return refuse(Missing, "want X-Date and Authorization: V2-HMAC-SHA256 headers")
	}
	for _, s := range d.Secrets {
		err := dlocal.Verify(s, d.Login, date, body, h.Get(dlocal.HeaderAuthorization))
		if errors.Is(err, dlocal.ErrMissingSignature) {
			return refuse(Malformed, "Authorization is not a V2-HMAC-SHA256 signature")
		}
		if err == nil {
			return d.checkDate(date, now)
		}
	}
	return refuse(Mismatch, "signature does not match")
}

func (d DLocal) checkDate(date string, now time.Time) error {
	if d.Tolerance <= 0 {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, date)
	if err != nil {
		return refuse(Malformed, "X-Date is not an ISO-8601 time")
	}
	return checkTime(t, now, d.Tolerance)
}
