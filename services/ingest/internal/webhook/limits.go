package webhook

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// retryAfterSeconds is the Retry-After of a delivery refused for load: a
// PSP retries it later, so nothing is lost.
const retryAfterSeconds = 1

// admit applies the intake bounds before any of the body is read: the
// source's rate limit (429) and the requests in flight across all sources
// (503, after waiting for a slot: takeSlot). It returns release, to call
// once the request is answered, or an error answering the refusal. Both
// refusals carry Retry-After and a JSON error, so a sender retries. The
// rate limit counts every request to the source, signed or not: checking
// signatures first would mean reading bodies, the cost the bound is for.
func (h *Handler) admit(c echo.Context, src Source) (release func(), err error) {
	if src.Limiter != nil && !src.Limiter.Allow() {
		c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
		return nil, h.refuseStatus(c, src.Name, http.StatusTooManyRequests, "rate_limited", "over the source's rate limit; retry later")
	}
	if !h.takeSlot(c.Request().Context()) {
		c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
		return nil, h.refuseStatus(c, src.Name, http.StatusServiceUnavailable, "busy", "too many webhook deliveries in flight; retry later")
	}
	return func() { <-h.inFlight }, nil
}

// takeSlot takes a slot of the deliveries in flight: at once if one is
// free, else after waiting up to h.wait among at most WaitingPerSlot per
// slot. A burst (a PSP flushing its queue) is then taken as slots free up
// instead of refused, and retried by the PSP minutes later.
func (h *Handler) takeSlot(ctx context.Context) bool {
	select {
	case h.inFlight <- struct{}{}:
		return true
	default:
	}
	if h.wait <= 0 {
		return false
	}
	select {
	case h.waiting <- struct{}{}:
		defer func() { <-h.waiting }()
	default:
		return false
	}
	timer := time.NewTimer(h.wait)
	defer timer.Stop()
	select {
	case h.inFlight <- struct{}{}:
		return true
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// readBody reads the request body, up to limit bytes. A body announcing its
// Content-Length is read into one buffer of that size, so a delivery in
// flight holds its size and not the up to twice as much (and the garbage)
// of a growing buffer; a body without one is read growing.
func readBody(c echo.Context, limit int64) ([]byte, error) {
	r := c.Request()
	body := http.MaxBytesReader(c.Response(), r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		buf := make([]byte, n)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(body)
}
