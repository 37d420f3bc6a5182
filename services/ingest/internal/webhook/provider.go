package webhook

import (
	"encoding/json"
	"errors"
	"time"
)

// ProviderEvent is the part of a fiscal provider's webhook that onceflow
// reads (docs/wire-invoicy.md):
//
//	{"id":"evt_…","type":"document.status_changed","created_at":"RFC 3339",
//	 "data":{"reference":"<CFENumReferencia>","status":"<CFEStatus>"}}
type ProviderEvent struct {
	CreatedAt time.Time `json:"created_at"`
	Data      struct {
		Reference string `json:"reference"`
		Status    string `json:"status"`
	} `json:"data"`
}

// ParseProviderEvent reads a provider webhook body, refusing one without a
// reference or status.
func ParseProviderEvent(body []byte) (ProviderEvent, error) {
	var ev ProviderEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return ProviderEvent{}, errors.New("body is not a provider event: want data.reference, data.status and an RFC 3339 created_at")
	}
	if ev.Data.Reference == "" || ev.Data.Status == "" {
		return ProviderEvent{}, errors.New("provider event lacks data.reference or data.status")
	}
	return ev, nil
}
