package pspsim

import (
	"net/http"
	"slices"
	"sort"
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

// listPayments answers GET /payments: the payments of an order, or those
// created in a period, a page at a time (docs/wire-dlocal.md: a shape we
// assume, dLocal publishes none).
func (s *Server) listPayments(w http.ResponseWriter, r *http.Request, _ []byte) {
	f, apiErr := parseListFilter(r)
	if apiErr != nil {
		writeError(w, *apiErr)
		return
	}
	s.mu.Lock()
	p := pageOf(s.paymentList.matching(f), f)
	p.Data = snapshots(p.Data)
	s.mu.Unlock()
	server.WriteJSON(w, http.StatusOK, p)
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
	p := pageOf(s.refundList.matching(f), f)
	p.Data = snapshots(p.Data)
	s.mu.Unlock()
	server.WriteJSON(w, http.StatusOK, p)
}

// listed is what a list keeps of an object: its order and when it was
// created, in creation order (seq breaks ties).
type listed interface {
	listedAs() (orderID string, created time.Time, seq int)
}

// list holds objects oldest first and by order, so that a page of a
// period or of an order costs what the page holds, not what the sandbox
// holds: a soak keeps a million payments here. Callers hold s.mu.
type list[T listed] struct {
	all     []T
	byOrder map[string][]T
}

// add files v in creation order. Objects come almost always in that order,
// so the place is found from the end.
func (l *list[T]) add(v T) {
	l.all = insertInOrder(l.all, v)
	if l.byOrder == nil {
		l.byOrder = map[string][]T{}
	}
	id, _, _ := v.listedAs()
	l.byOrder[id] = insertInOrder(l.byOrder[id], v)
}

// matching returns the objects f selects, oldest first, sharing l's
// backing array: the caller copies what it keeps past s.mu.
func (l *list[T]) matching(f listFilter) []T {
	span := l.all
	if f.orderID != "" {
		span = l.byOrder[f.orderID]
	}
	lo, hi := 0, len(span)
	if !f.from.IsZero() {
		lo = sort.Search(len(span), func(i int) bool { _, c, _ := span[i].listedAs(); return !c.Before(f.from) })
	}
	if !f.to.IsZero() {
		hi = sort.Search(len(span), func(i int) bool { _, c, _ := span[i].listedAs(); return !c.Before(f.to) })
	}
	return span[lo:max(lo, hi)]
}

// insertInOrder inserts v into s, kept by (created, seq).
func insertInOrder[T listed](s []T, v T) []T {
	_, created, seq := v.listedAs()
	i := len(s)
	for i > 0 {
		_, c, q := s[i-1].listedAs()
		if c.Before(created) || (c.Equal(created) && q < seq) {
			break
		}
		i--
	}
	return slices.Insert(s, i, v)
}

// snapshots copies the objects behind ps, for use after s.mu is released.
func snapshots[T any](ps []*T) []*T {
	out := make([]*T, len(ps))
	for i, p := range ps {
		c := *p
		out[i] = &c
	}
	return out
}

func (p *payment) listedAs() (string, time.Time, int) { return p.OrderID, p.created, p.seq }
func (r *refund) listedAs() (string, time.Time, int)  { return r.OrderID, r.created, r.seq }
