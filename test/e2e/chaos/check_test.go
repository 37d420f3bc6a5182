package chaos

import (
	"testing"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

func doc(source, kind string, typ, status int, injected bool) stack.Document {
	return stack.Document{Reference: source, Type: typ, Status: status, Addendum: "onceflow " + source + " " + kind, Injected: injected}
}

func TestCheck(t *testing.T) {
	sources := []Source{{"payment:p1", 101, "dlocal"}, {"payment:p2", 111, "stripe"}, {"refund:r1", 102, "mercadopago"}}
	good := []stack.Document{
		doc("payment p1", "invoice", 101, 5, false),
		doc("payment p2", "invoice", 111, 5, false),
		doc("refund r1", "credit_note", 102, 5, false),
	}
	tests := []struct {
		name                          string
		docs                          []stack.Document
		duplicates, missing, problems int
		injected                      int
	}{
		{"exactly right", good, 0, 0, 0, 0},
		{"a second document", append(good[:3:3], doc("payment p1", "invoice", 101, 5, false)), 1, 0, 1, 0},
		{"an injected duplicate is not onceflow's", append(good[:3:3], doc("payment p1", "invoice", 101, 5, true)), 0, 0, 0, 1},
		{"one missing", good[1:], 0, 1, 1, 0},
		{"wrong type", []stack.Document{good[0], doc("payment p2", "invoice", 101, 5, false), good[2]}, 0, 0, 1, 0},
		{"not final is not valid", []stack.Document{good[0], doc("payment p2", "invoice", 111, 4, false), good[2]}, 0, 1, 2, 0},
		{"a document nobody asked for", append(good[:3:3], doc("payment p9", "invoice", 101, 5, false)), 1, 0, 1, 0},
		{"a rejected document is kept, not valid", append(good[:3:3], doc("payment p1", "invoice", 101, 3, false)), 0, 0, 0, 0},
		{"only a rejected document is missing", []stack.Document{doc("payment p1", "invoice", 101, 3, false), good[1], good[2]}, 0, 1, 1, 0},
		{"a re-issue next to a second valid one", append(good[:3:3], doc("payment p2", "invoice", 111, 3, false), doc("payment p2", "invoice", 111, 5, false)), 1, 0, 1, 0},
		{"a rejected document for nothing is no duplicate", append(good[:3:3], doc("payment p9", "invoice", 101, 3, false)), 0, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(sources, tc.docs)
			if v.Duplicates != tc.duplicates || v.Missing != tc.missing || len(v.Problems) != tc.problems || v.Injected != tc.injected {
				t.Fatalf("verdict = %+v, want duplicates=%d missing=%d problems=%d injected=%d", v, tc.duplicates, tc.missing, tc.problems, tc.injected)
			}
		})
	}
}

func TestCheckCountsRejected(t *testing.T) {
	v := Check([]Source{{"payment:p1", 101, "dlocal"}}, []stack.Document{doc("payment p1", "invoice", 101, 3, false), doc("payment p1", "invoice", 101, 5, false)})
	if v.Rejected != 1 || v.Documents != 1 || v.Missing != 0 || v.Duplicates != 0 {
		t.Fatalf("verdict = %+v, want one rejected and one valid document", v)
	}
}

// Across PSPs, each PSP's sources are tallied apart: a second document of
// a dLocal payment, a Stripe payment with none, and a document for nothing
// the driver made.
func TestCheckTalliesEachPSP(t *testing.T) {
	sources := []Source{{"payment:D-1", 101, "dlocal"}, {"payment:pi_1", 101, "stripe"}, {"payment:7", 101, "mercadopago"},
		{"refund:7-8", 102, "mercadopago"}}
	docs := []stack.Document{
		doc("payment D-1", "invoice", 101, 5, false), doc("payment D-1", "invoice", 101, 5, false),
		doc("payment 7", "invoice", 101, 5, false), doc("refund 7-8", "credit_note", 102, 5, false),
		doc("payment pi_9", "invoice", 101, 5, false),
	}
	v := Check(sources, docs)
	want := map[string]Tally{
		"dlocal":      {Sources: 1, Documents: 2, Duplicates: 1},
		"stripe":      {Sources: 1, Missing: 1},
		"mercadopago": {Sources: 2, Documents: 2},
		unknownPSP:    {Duplicates: 1},
	}
	if len(v.ByPSP) != len(want) {
		t.Fatalf("by PSP = %+v, want %+v", v.ByPSP, want)
	}
	for psp, w := range want {
		if v.ByPSP[psp] != w {
			t.Errorf("%s: %+v, want %+v", psp, v.ByPSP[psp], w)
		}
	}
	if v.Duplicates != 2 || v.Missing != 1 {
		t.Fatalf("verdict = %+v, want duplicates=2 missing=1 in all", v)
	}
}

// A run is not OK while a case is open, a document is missing or doubled.
func TestResultOK(t *testing.T) {
	good := Result{Payments: 2, Documents: 2, Cases: 3, Closed: 3}
	if !good.OK() {
		t.Fatalf("%s: want OK", good)
	}
	for name, bad := range map[string]Result{
		"an open case": {Payments: 2, Documents: 2, Cases: 3, Closed: 2, Open: 1},
		"a duplicate":  {Payments: 2, Documents: 2, Duplicates: 1},
		"a missing":    {Payments: 2, Documents: 1, Missing: 1},
	} {
		if bad.OK() {
			t.Errorf("%s: %s is OK", name, bad)
		}
	}
	want := "chaos: payments=2 refunds=0 documents=2 duplicates=0 missing=0 cases=3 closed=3 open=0 kills=0 sqs_restarts=0 pg_restarts=0 elapsed=0s"
	if got := good.String(); got != want {
		t.Fatalf("summary = %q, want %q", got, want)
	}
}
