package httpserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// stalled is a Liveness that answers err.
type stalled struct{ err error }

func (s stalled) Stalled(time.Time) error { return s.err }

// /healthz answers 200 without a Liveness or with a live one, and 503 with
// the reason when the Liveness reports a stall.
func TestHealthzAsksTheLiveness(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		live Liveness
		want int
	}{
		{"none", nil, http.StatusOK},
		{"alive", stalled{}, http.StatusOK},
		{"stalled", stalled{errors.New("loop 2 has not made progress for 11m0s")}, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := New(zap.NewNop(), Addrs{Public: "127.0.0.1:0", Admin: "127.0.0.1:0"}, prometheus.NewRegistry())
			if tc.live != nil {
				s.SetLiveness(tc.live)
			}
			rec := httptest.NewRecorder()
			s.Echo().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
			if rec.Code != tc.want {
				t.Fatalf("healthz = %d, want %d", rec.Code, tc.want)
			}
			if tc.want != http.StatusOK && !strings.Contains(rec.Body.String(), "loop 2") {
				t.Errorf("healthz body %s does not give the reason", rec.Body.String())
			}
		})
	}
}
