package httpapi

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/httpserver"
)

// staleClaim is how long an in-progress key stays locked; after it the
// request is considered dead (its process crashed) and may be run again.
const staleClaim = time.Minute

// recorder keeps a copy of what the handler writes.
type recorder struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

// idempotent honours an Idempotency-Key header on a POST: the same key and
// body get the first response again; the same key with another body is
// refused with 422, and a key whose first request is still running with 409.
// A 5xx answer releases the key so the client can retry.
func (a *API) idempotent(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := c.Request().Header.Get("Idempotency-Key")
		if key == "" {
			return next(c)
		}
		if len(key) > 255 {
			return errkind.Coded(errkind.Invalid, "invalid_idempotency_key", "Idempotency-Key: want at most 255 characters")
		}
		body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxBody))
		if err != nil {
			return httpserver.NewHTTPError(http.StatusRequestEntityTooLarge, "body_too_large", "body over 1 MiB")
		}
		c.Request().Body = io.NopCloser(bytes.NewReader(body))
		hash := sha256.Sum256(body)
		route := c.Request().URL.Path // with the id: a key names one request to one resource
		ctx := c.Request().Context()
		claimed, err := a.store.BeginIdempotent(ctx, route, key, hash[:], time.Now().Add(-staleClaim))
		if err != nil {
			return err
		}
		if !claimed {
			return a.replay(c, route, key, hash[:])
		}
		return a.runOnce(c, next, route, key)
	}
}

func (a *API) runOnce(c echo.Context, next echo.HandlerFunc, route, key string) error {
	rec := &recorder{ResponseWriter: c.Response().Writer}
	c.Response().Writer = rec
	if err := next(c); err != nil {
		c.Error(err)
	}
	ctx := c.Request().Context()
	status := c.Response().Status
	if status >= 500 {
		return a.store.ForgetIdempotent(ctx, route, key)
	}
	return a.store.FinishIdempotent(ctx, route, key, status, rec.body.Bytes())
}

func (a *API) replay(c echo.Context, route, key string, hash []byte) error {
	k, err := a.store.Idempotent(c.Request().Context(), route, key)
	if errkind.Is(err, errkind.NotFound) {
		return errkind.Coded(errkind.Conflict, "idempotency_key_in_progress", "a request with this Idempotency-Key just failed; retry")
	}
	if err != nil {
		return err
	}
	switch {
	case !bytes.Equal(k.RequestHash, hash):
		return errkind.Coded(errkind.Refused, "idempotency_key_reused", "this Idempotency-Key was used with another request body")
	case k.ResponseStatus == 0:
		return errkind.Coded(errkind.Conflict, "idempotency_key_in_progress", "a request with this Idempotency-Key is still in progress")
	}
	c.Response().Header().Set("Idempotent-Replayed", "true")
	return c.Blob(k.ResponseStatus, echo.MIMEApplicationJSON, k.ResponseBody)
}
