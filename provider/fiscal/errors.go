package fiscal

import "github.com/onceflow/onceflow/pkg/errkind"

// The outcomes of a failed provider call, shared by every adapter. Each
// error an adapter's Emit or Lookup returns wraps exactly one of them, so
// callers tell them apart with errkind.Is (or errors.Is on the sentinel)
// and need nothing from the adapter itself.
var (
	// ErrRefused, of kind errkind.Refused: the provider definitely did not
	// act (it said no, the request was malformed, or it never left this
	// process). Sending the same document again is safe.
	ErrRefused = errkind.New(errkind.Refused, "refused, nothing was stored")
	// ErrAmbiguous, of kind errkind.Ambiguous: the request may have reached
	// the provider and been acted on (a timeout or connection loss after
	// sending, a 5xx, an answer that cannot be read). Look the reference up
	// before any resend.
	ErrAmbiguous = errkind.New(errkind.Ambiguous, "outcome unknown, the provider may have acted")
)

// StatusOutcome classifies a provider's non-2xx HTTP status: ErrRefused
// only for the 4xx answers that prove the provider did nothing with the
// request (400, 401, 403, 404, 409, 422, 429, …), ErrAmbiguous for every
// other status. 408 Request Timeout, 425 Too Early and 499 Client Closed
// Request can come from a proxy or gateway after the request was passed on,
// so they prove nothing; nor does a 1xx or 3xx, nor a 5xx.
func StatusOutcome(status int) error {
	switch status {
	case 408, 425, 499:
		return ErrAmbiguous
	}
	if status >= 400 && status < 500 {
		return ErrRefused
	}
	return ErrAmbiguous
}
