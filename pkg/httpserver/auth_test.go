package httpserver

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

func TestBearerAuth(t *testing.T) {
	cases := []struct {
		name, token, header string
		want                int
	}{
		{"right token", "s3cret", "Bearer s3cret", http.StatusOK},
		{"wrong token", "s3cret", "Bearer nope", http.StatusUnauthorized},
		{"no header", "s3cret", "", http.StatusUnauthorized},
		{"other scheme", "s3cret", "Basic s3cret", http.StatusUnauthorized},
		{"unset token refuses all", "", "Bearer ", http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := echo.New()
			e.GET("/x", func(c echo.Context) error { return c.NoContent(http.StatusOK) }, BearerAuth(tc.token, "ADMIN_TOKEN"))
			req := httptest.NewRequest(http.MethodGet, "/x", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d", rec.Code, tc.want)
			}
		})
	}
}
