package fiscal

import (
	"errors"
	"testing"
)

// TestStatusOutcome pins which statuses prove the provider did nothing,
// and that only a 429 (slow down) says nothing about the request either.
func TestStatusOutcome(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]error{
		400: ErrRefused, 401: ErrRefused, 403: ErrRefused, 404: ErrRefused, 409: ErrRefused, 422: ErrRefused, 429: ErrRefused,
		408: ErrAmbiguous, 425: ErrAmbiguous, 499: ErrAmbiguous,
		100: ErrAmbiguous, 302: ErrAmbiguous, 500: ErrAmbiguous, 502: ErrAmbiguous, 504: ErrAmbiguous, 0: ErrAmbiguous,
	} {
		got := StatusOutcome(status)
		if !errors.Is(got, want) || errors.Is(got, ErrUnavailable) != (status == 429) {
			t.Errorf("StatusOutcome(%d) = %v, want %v (unavailable: %v)", status, got, want, status == 429)
		}
	}
}
