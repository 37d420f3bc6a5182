package fiscalsim

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// The same seed draws the same faults; the rates show in what is drawn.
func TestProfileDrawsAreSeededAndFollowTheRates(t *testing.T) {
	p := Profile{Seed: 7, FailRate: 0.2, DuplicateRate: 0.3, PendingRate: 0.5, PendingPollsMax: 4, RejectRate: 0.1}
	draw := func() (fails, dups, pendings, rejects int, seq []action) {
		d := newProfileDice(p)
		for range 2000 {
			a := d.draw(true)
			seq = append(seq, a)
			switch {
			case a.fail:
				fails++
				continue
			case a.duplicate:
				dups++
			}
			if a.pending > 0 {
				pendings++
				if a.pending > p.PendingPollsMax {
					t.Fatalf("pending %d over the maximum %d", a.pending, p.PendingPollsMax)
				}
			}
			if a.reject {
				rejects++
			}
		}
		return
	}
	f1, d1, p1, r1, s1 := draw()
	f2, d2, p2, r2, s2 := draw()
	if f1 != f2 || d1 != d2 || p1 != p2 || r1 != r2 || !slices.Equal(s1, s2) {
		t.Fatal("the same seed drew different faults")
	}
	for name, got := range map[string]struct{ n, lo, hi int }{
		"fail": {f1, 300, 500}, "pending": {p1, 650, 950}, "reject": {r1, 100, 230},
	} {
		if got.n < got.lo || got.n > got.hi {
			t.Errorf("%s drawn %d times in 2000, want %d to %d", name, got.n, got.lo, got.hi)
		}
	}
	if d1 == 0 {
		t.Error("no duplicate drawn")
	}
}

// A duplicate's second copy is marked injected; planted documents are not,
// and dropping a reference forgets its documents.
func TestInjectedPlantedAndDropped(t *testing.T) {
	s := New(Config{EmpCodigo: "e", EmpPK: "p", AccessKey: "k"})
	docs := s.issue([]Document{{Reference: "11", Type: 101}}, action{duplicate: true})
	if len(docs) != 2 || docs[0].Injected || !docs[1].Injected {
		t.Fatalf("duplicate = %+v, want the second copy injected", docs)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/sandbox/documents", "application/json", strings.NewReader(`{"reference":"22","type":111,"addendum":"onceflow payment p9 invoice"}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("plant: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	if n := s.CountByReference("22"); n != 1 {
		t.Fatalf("planted documents = %d, want 1", n)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/sandbox/documents/11", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("drop: %v", err)
	}
	resp.Body.Close()
	if n := s.CountByReference("11"); n != 0 {
		t.Fatalf("documents under a dropped reference = %d, want 0", n)
	}
	bad, _ := http.Post(srv.URL+"/sandbox/documents", "application/json", strings.NewReader(`{"reference":"x1"}`))
	if bad.StatusCode != http.StatusBadRequest {
		t.Fatalf("planting a bad document answered %d, want 400", bad.StatusCode)
	}
	bad.Body.Close()
}

// Look-ups by reference go through the reference index, which a drop keeps
// right, as it keeps the keyed API's index of each key.
func TestIndexesFollowADrop(t *testing.T) {
	s := New(Config{EmpCodigo: "e", EmpPK: "p", AccessKey: "k"})
	for _, ref := range []string{"31", "32", "33"} {
		s.issue([]Document{{Reference: ref, Type: 101}}, action{})
	}
	if _, replay := s.issueKeyed("42", Document{Reference: "42", Type: 101}, action{}); replay {
		t.Fatal("a new key replayed")
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/sandbox/documents/32", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("drop: %v", err)
	}
	resp.Body.Close()
	for ref, want := range map[string]int{"31": 1, "32": 0, "33": 1, "42": 1} {
		if got := s.find(filter{items: []specific{{reference: ref}}}); len(got) != want || (want == 1 && got[0].Reference != ref) {
			t.Errorf("find %s = %+v, want %d document under it", ref, got, want)
		}
	}
	if got := s.find(filter{}); len(got) != 3 {
		t.Errorf("find with no reference returned %d documents, want all 3", len(got))
	}
	if d, replay := s.issueKeyed("42", Document{Reference: "42", Type: 101}, action{}); !replay || d.Reference != "42" {
		t.Fatalf("key 42 after the drop: replay %v, reference %q; want its own document replayed", replay, d.Reference)
	}
}
