package pspsim_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/sandbox/pspsim"
)

// Payments are listed oldest first, by order and by period, a page at a
// time, also when the clock steps back between two of them (the listing
// orders by creation time, not by arrival).
func TestListsPaymentsByOrderAndPeriodOldestFirst(t *testing.T) {
	t.Parallel()
	base := fixedNow()
	offsets := []int{3, 1, 2, 1, 5} // seconds after base, in creation order
	orders := []string{"o-a", "o-b", "o-a", "o-b", "o-a"}
	var mu sync.Mutex
	next := 0
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return base.Add(time.Duration(offsets[next]) * time.Second)
	}
	e := start(t, pspsim.Config{Now: clock})
	ids := make([]string, len(offsets))
	for i, order := range orders {
		mu.Lock()
		next = i
		mu.Unlock()
		status, created := call(t, http.MethodPost, e.url+"/payments", strings.Replace(paymentBody("", ""), `"order-1"`, `"`+order+`"`, 1))
		if status != http.StatusOK {
			t.Fatalf("create %d: %d %v", i, status, created)
		}
		ids[i] = created["id"].(string)
	}
	at := func(sec int) string { return base.Add(time.Duration(sec) * time.Second).Format(time.RFC3339) }
	tests := []struct {
		name  string
		query url.Values
		want  []int // indexes into ids
	}{
		{"all", url.Values{}, []int{1, 3, 2, 0, 4}},
		{"order o-a", url.Values{"order_id": {"o-a"}}, []int{2, 0, 4}},
		{"order o-b", url.Values{"order_id": {"o-b"}}, []int{1, 3}},
		{"unknown order", url.Values{"order_id": {"o-z"}}, nil},
		{"period [1s, 3s)", url.Values{"created_from": {at(1)}, "created_to": {at(3)}}, []int{1, 3, 2}},
		{"period from 3s", url.Values{"created_from": {at(3)}}, []int{0, 4}},
		{"order o-a before 3s", url.Values{"order_id": {"o-a"}, "created_to": {at(3)}}, []int{2}},
		{"empty period", url.Values{"created_from": {at(4)}, "created_to": {at(2)}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for page := 1; ; page++ {
				q := url.Values{"page": {strconv.Itoa(page)}, "page_size": {"2"}}
				for k, v := range tt.query {
					q[k] = v
				}
				status, body := call(t, http.MethodGet, e.url+"/payments?"+q.Encode(), "")
				if status != http.StatusOK {
					t.Fatalf("page %d: %d %v", page, status, body)
				}
				data, _ := body["data"].([]any)
				for _, d := range data {
					got = append(got, d.(map[string]any)["id"].(string))
				}
				if body["has_more"] != true {
					break
				}
			}
			want := []string{}
			for _, i := range tt.want {
				want = append(want, ids[i])
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("listed %v, want %v", got, want)
			}
		})
	}
}
