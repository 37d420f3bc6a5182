package fiscal

import (
	"errors"
	"fmt"
	"testing"

	"github.com/onceflow/onceflow/pkg/errkind"
)

func TestProviderErrorsHaveTheirKinds(t *testing.T) {
	for _, tt := range []struct {
		err  error
		kind errkind.Kind
	}{{ErrRefused, errkind.Refused}, {ErrAmbiguous, errkind.Ambiguous}, {ErrUnavailable, errkind.Refused}} {
		wrapped := fmt.Errorf("adapter emit 123: %w: %w", tt.err, errors.New("HTTP 400"))
		if !errkind.Is(wrapped, tt.kind) || !errors.Is(wrapped, tt.err) {
			t.Errorf("%v: kind %v, want %v", wrapped, errkind.Of(wrapped), tt.kind)
		}
	}
}
