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

// page is the answer of GET /payments and GET /refunds: one page of
// objects, oldest first, and whether another page follows.
type page[T any] struct {
	Data    []T  `json:"data"`
	Page    int  `json:"page"`
	HasMore bool `json:"has_more"`
}

// pageOf cuts page f.page out of all.
func pageOf[T any](all []T, f listFilter) page[T] {
	start := min((f.page-1)*f.size, len(all))
	end := min(start+f.size, len(all))
	return page[T]{Data: all[start:end], Page: f.page, HasMore: end < len(all)}
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

// matches reports whether an object of order orderID created at created
// passes the filter.
func (f listFilter) matches(orderID string, created time.Time) bool {
	return (f.orderID == "" || orderID == f.orderID) &&
		(f.from.IsZero() || !created.Before(f.from)) && (f.to.IsZero() || created.Before(f.to))
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
	server.WriteJSON(w, http.StatusOK, pageOf(s.matching(f), f))
}

// listRefunds answers GET /refunds: the refunds of an order or created in
// a period, a page at a time (assumed like GET /payments).
func (s *Server) listRefunds(w http.ResponseWriter, r *http.Request, _ []byte) {
	f, apiErr := parseListFilter(r)
	if apiErr != nil {
		writeError(w, *apiErr)
		return
	}
	s.mu.Lock()
	all := []refund{}
	for _, ref := range s.refunds {
		if f.matches(ref.OrderID, ref.created) {
			all = append(all, *ref)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b refund) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	server.WriteJSON(w, http.StatusOK, pageOf(all, f))
}

// matching returns snapshots of the payments f selects, oldest first.
func (s *Server) matching(f listFilter) []payment {
	s.mu.Lock()
	out := []payment{}
	for _, p := range s.payments {
		if f.matches(p.OrderID, p.created) {
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
