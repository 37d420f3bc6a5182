package dlocal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// wire is the JSON payments and refunds share. amount stays a json.Number so
// it is parsed as a decimal, never a float; status_code is a string in
// payment objects ("200") and a number in refund objects (200); dates come
// as 2019-06-26T15:17:31.000+0000 or 2018-02-15T15:14:52-00:00.
type wire struct {
	ID          string      `json:"id"`
	PaymentID   string      `json:"payment_id"`
	Status      string      `json:"status"`
	StatusCode  code        `json:"status_code"`
	Amount      json.Number `json:"amount"`
	Currency    string      `json:"currency"`
	OrderID     string      `json:"order_id"`
	CreatedDate string      `json:"created_date"`
}

// code is a status code sent as a JSON string or number.
type code string

// UnmarshalJSON accepts "200", 200 and null.
func (c *code) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*c = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = code(s)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("status_code: want a number or a string, got %s", b)
		}
		*c = code(n.String())
	}
	return nil
}

// dateLayouts are the shapes dLocal writes dates in.
var dateLayouts = []string{
	"2006-01-02T15:04:05.000-0700", "2006-01-02T15:04:05-0700",
	time.RFC3339Nano, "2006-01-02T15:04:05.000Z07:00", "2006-01-02 15:04:05",
	"2006-01-02T15:04:05", // a subscription execution's created_at, read as UTC
}

// parseDate reads a dLocal date in any of its shapes; empty is the zero time.
func parseDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range dateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("created_date %q: not a date dLocal writes", s)
}

// successCode is the status_code dLocal gives a PAID payment or a SUCCESS
// refund.
const successCode = "200"

// consistent reports whether a status and its code agree where it matters:
// a PAID payment or SUCCESS refund whose code says otherwise is not trusted
// (it is fetched again later) rather than invoiced.
func consistent(status string, c code) bool {
	if status != "PAID" && status != "SUCCESS" {
		return true
	}
	return c == "" || string(c) == successCode
}
