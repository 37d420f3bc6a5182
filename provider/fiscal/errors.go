package fiscal

import (
	"fmt"

	"github.com/onceflow/onceflow/pkg/errkind"
)

// The outcomes of a failed provider call, shared by every adapter. Each
// error an adapter's Emit or Lookup returns wraps exactly one of
// ErrRefused and ErrAmbiguous, so callers tell them apart with errkind.Is
// (or errors.Is on the sentinel) and need nothing from the adapter itself;
// a refusal that says nothing about the document wraps ErrUnavailable too.
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
	// ErrUnavailable wraps ErrRefused: the call never came before the
	// provider's judgement of the document. Our own rate limiter had no turn
	// for it within the timeout, no connection carried it, or the provider
	// asked us to slow down (429). Sending again is as safe as after any
	// refusal, but it is no refusal of the document.
	ErrUnavailable = fmt.Errorf("%w: provider unavailable", ErrRefused)
)

// StatusOutcome classifies a provider's non-2xx HTTP status: ErrRefused
// only for the 4xx answers that prove the provider did nothing with the
// request (400, 401, 403, 404, 409, 422, …; ErrUnavailable for 429 Too Many
// Requests), ErrAmbiguous for every other status. 408 Request Timeout, 425
// Too Early and 499 Client Closed Request can come from a proxy or gateway
// after the request was passed on, so they prove nothing; nor does a 1xx or
// 3xx, nor a 5xx.
func StatusOutcome(status int) error {
	switch status {
	case 408, 425, 499:
		return ErrAmbiguous
	case 429:
		return ErrUnavailable
	}
	if status >= 400 && status < 500 {
		return ErrRefused
	}
	return ErrAmbiguous
}
