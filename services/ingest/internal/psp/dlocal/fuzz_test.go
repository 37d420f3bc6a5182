package dlocal

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzWire decodes fuzzed PSP answers as payments and refunds are: decode
// must not panic, and what it accepts must be a non-negative amount and a
// success status only with the success code.
func FuzzWire(f *testing.F) {
	f.Add([]byte(`{"id":"D-1","status":"PAID","status_code":"200","amount":10.00,"currency":"UYU","created_date":"2019-06-26T15:17:31.000+0000"}`))
	f.Add([]byte(`{"id":"R-1","payment_id":"D-1","status":"SUCCESS","status_code":200,"amount":"1220.50","created_date":"2018-02-15T15:14:52-00:00"}`))
	f.Add([]byte(`{"status":"paid","status_code":null,"amount":1e400,"created_date":"2019-06-26 15:17:31"}`))
	f.Add([]byte(`{"status_code":true,"amount":-0.001}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var w wire
		if err := json.Unmarshal(body, &w); err != nil {
			return
		}
		amount, _, err := w.decode()
		if err != nil {
			return
		}
		if amount < 0 {
			t.Fatalf("amount %q decoded to %d", w.Amount, amount)
		}
		if st := strings.ToUpper(w.Status); (st == "PAID" || st == "SUCCESS") && w.StatusCode != "" && w.StatusCode != successCode {
			t.Fatalf("trusted %s with code %s", st, w.StatusCode)
		}
		_ = errorCode(body)
	})
}
