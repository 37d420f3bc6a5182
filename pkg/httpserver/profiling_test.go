package httpserver

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

func TestProfilingNeedsTheAdminToken(t *testing.T) {
	cases := []struct {
		name, token, header, path string
		want                      int
		body                      []byte // the response starts with it
	}{
		{"cpu profile", "s3cret", "Bearer s3cret", "/debug/pprof/profile?seconds=1", http.StatusOK, []byte{0x1f, 0x8b}}, // gzipped protobuf
		{"goroutines", "s3cret", "Bearer s3cret", "/debug/pprof/goroutine?debug=1", http.StatusOK, []byte("goroutine profile:")},
		{"index", "s3cret", "Bearer s3cret", "/debug/pprof/", http.StatusOK, []byte("<html>")},
		{"wrong token", "s3cret", "Bearer nope", "/debug/pprof/heap", http.StatusUnauthorized, []byte(`{"error":`)},
		{"unset token keeps it closed", "", "Bearer ", "/debug/pprof/heap", http.StatusUnauthorized, []byte(`{"error":`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(zap.NewNop(), Addrs{Public: "127.0.0.1:0", Admin: "127.0.0.1:0"}, prometheus.NewRegistry())
			s.Profiling(tc.token)
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			req.Header.Set("Authorization", tc.header)
			rec := httptest.NewRecorder()
			s.AdminEcho().ServeHTTP(rec, req)
			if rec.Code != tc.want || !bytes.HasPrefix(rec.Body.Bytes(), tc.body) {
				t.Fatalf("status %d, body %.40q; want %d starting %q", rec.Code, rec.Body.Bytes(), tc.want, tc.body)
			}
		})
	}
}
