package admin

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
)

// MaxRepublish is how many event keys one POST /admin/outbox/republish
// may name.
const MaxRepublish = 100

// RepublishRequest is the body of POST /admin/outbox/republish.
type RepublishRequest struct {
	EventKeys []string `json:"event_keys"`
}

// RepublishResponse says what became of each key: due again (the relay
// publishes it once more), parked (refused: an operator unparks it) or
// unknown (no outbox row).
type RepublishResponse struct {
	Republished []string `json:"republished"`
	Parked      []string `json:"parked"`
	Unknown     []string `json:"unknown"`
}

// billingKey reports whether key names a billing event, the only ones the
// reconciler's sweep asks for: payment:<id>:paid or refund:<id>:succeeded.
func billingKey(key string) bool {
	for _, f := range [][2]string{{"payment:", ":paid"}, {"refund:", ":succeeded"}} {
		if id, ok := strings.CutPrefix(key, f[0]); ok {
			if id, ok = strings.CutSuffix(id, f[1]); ok && id != "" && len(key) <= 300 {
				return true
			}
		}
	}
	return false
}

// republish answers POST /admin/outbox/republish: the reconciler's sweep
// asks ingest to announce again the billing events whose document is
// missing. Ingest makes their outbox rows due again in its own transaction
// and the relay publishes them, signed with its key; the reconciler never
// reads an event's payload.
func (a *API) republish(c echo.Context) error {
	var req RepublishRequest
	if err := c.Bind(&req); err != nil {
		return errkind.Coded(errkind.Invalid, "invalid_body", "body: want JSON {\"event_keys\": [...]}")
	}
	if len(req.EventKeys) == 0 || len(req.EventKeys) > MaxRepublish {
		return errkind.Coded(errkind.Invalid, "invalid_event_keys", "event_keys: want 1 to %d event keys", MaxRepublish)
	}
	for _, k := range req.EventKeys {
		if !billingKey(k) {
			return errkind.Coded(errkind.Invalid, "invalid_event_keys",
				"event_keys: want billing event keys, payment:<id>:paid or refund:<id>:succeeded")
		}
	}
	res, err := a.store.Republish(c.Request().Context(), req.EventKeys)
	if err != nil {
		return err
	}
	a.log.Info("outbox events made due again", zap.Int("republished", len(res.Due)),
		zap.Strings("parked", res.Parked), zap.Strings("unknown", res.Unknown))
	return c.JSON(http.StatusOK, RepublishResponse{Republished: res.Due, Parked: res.Parked, Unknown: res.Unknown})
}
