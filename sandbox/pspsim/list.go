package pspsim

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// pageSize is the default and largest page of GET /payments.
const pageSize = 100

// paymentList is GET /payments' answer: one page of payments, oldest
// first, and whether another page follows.
type paymentList struct {
	Data    []payment `json:"data"`
	Page    int       `json:"page"`
	HasMore bool      `json:"has_more"`
}

// listFilter is GET /payments' query: an order id, a creation period
// [created_from, created_to) in RFC 3339, a 1-based page and its size.
type listFilter struct {
	orderID  string
	from, to time.Time
	page     int
	size     int
}

// parseListFilter reads the query, naming the parameter at fault.
func parseListFilter(r *http.Request) (listFilter, *apiError) {
	q := r.URL.Query()
	f := listFilter{orderID: q.Get("order_id"), page: 1, size: pageSize}
	for name, dst := range map[string]*time.Time{"created_from": &f.from, "created_to": &f.to} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return f, ptr(invalidParam(name))
			}
			*dst = t
		}
	}
	for name, dst := range map[string]*int{"page": &f.page, "page_size": &f.size} {
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || (name == "page_size" && n > pageSize) {
				return f, ptr(invalidParam(name))
			}
			*dst = n
		}
	}
	return f, nil
}

// matches reports whether p passes the filter.
func (f listFilter) matches(p *payment) bool {
	return (f.orderID == "" || p.OrderID == f.orderID) &&
		(f.from.IsZero() || !p.created.Before(f.from)) && (f.to.IsZero() || p.created.Before(f.to))
}

// listPayments answers GET /payments: the payments of an order, or those
// created in a period, a page at a time (docs/wire-dlocal.md: a shape we
// assume, dLocal publishes none).
func (s *Server) listPayments(w http.ResponseWriter, r *http.Request, _ []byte) {
	f, apiErr := parseListFilter(r)
	if apiErr != nil {
		writeError(w, *apiErr)
		return
	}
	all := s.matching(f)
	start := min((f.page-1)*f.size, len(all))
	end := min(start+f.size, len(all))
	server.WriteJSON(w, http.StatusOK, paymentList{Data: all[start:end], Page: f.page, HasMore: end < len(all)})
}

// matching returns snapshots of the payments f selects, oldest first.
func (s *Server) matching(f listFilter) []payment {
	s.mu.Lock()
	out := []payment{}
	for _, p := range s.payments {
		if f.matches(p) {
			out = append(out, *p)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b payment) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	return out
}
