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
